"""Eager twins of greyhound's torch.library ops.

Every public op is a registered torch.library custom op (a fake implementation and autograd), so that torch.compile
keeps it in its graph (fullgraph=True). Called eagerly, though, the torch.library dispatch costs host time: on the
H200's host a causal_conv1d forward + backward took 1.29 ms of host time through the registered ops and 0.53 ms
without them (cProfile, B=8 D=4096 L=512, whose GPU work is ~0.06 ms; docs/perf/causal_conv1d.md), and a benchmark
of a small call measures exactly that. So eager calls run the same Python implementation and the same autograd
formulas through a plain `torch.autograd.Function` (`twin`); the public wrappers take the registered op while
torch.compile traces (`call`). A backward passed to `twin` takes `eager=True` and then calls the ops it needs
through `run(op, eager, ...)`, so a traced backward keeps its ops too.
"""
import torch

__all__ = ["twin", "call", "run"]


def run(op, eager: bool, *args):
    """`op(*args)`: its Python implementation called directly when `eager`, else through the dispatcher."""
    return op._init_fn(*args) if eager else op(*args)


def twin(op, setup_context, backward):
    """An autograd.Function running `op`'s implementation, then `setup_context(ctx, inputs, output)`, with
    `backward(ctx, *grads, eager=True)` (once differentiable, as the registered autograd)."""
    impl = op._init_fn

    def forward(ctx, *inputs):
        output = impl(*inputs)
        setup_context(ctx, inputs, output)
        return output

    @torch.autograd.function.once_differentiable
    def twin_backward(ctx, *grads):
        return backward(ctx, *grads, eager=True)

    # built with type() so that autograd's node class is named after the op (<op>_eagerBackward)
    return type(f"{op._name}_eager", (torch.autograd.Function,),
                {"forward": staticmethod(forward), "backward": staticmethod(twin_backward)})


def call(op, eager_twin, *inputs):
    """The registered `op` while torch.compile traces, else `eager_twin` (from `twin`, or None for an op without
    autograd: then its implementation is called directly)."""
    if torch.compiler.is_compiling():
        return op(*inputs)
    if eager_twin is None:
        return op._init_fn(*inputs)
    return eager_twin.apply(*inputs)
