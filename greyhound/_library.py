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

__all__ = ["twin", "call", "run", "once_differentiable"]


class _NotDifferentiableAgain(torch.autograd.Function):
    """The identity on a gradient, tied to the forward's inputs (`anchors`): differentiating it again raises."""

    @staticmethod
    def forward(ctx, message, gradient, *anchors):
        ctx.message = message
        return gradient.view_as(gradient)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(ctx.message)


def once_differentiable(name):
    """torch.autograd.function.once_differentiable for a backward of op `name`, made to fail loudly. torch's wraps the
    gradients in an error node only when the incoming gradients require grad, and ties that node to fresh leaves:
    `torch.autograd.grad(loss, x, create_graph=True)` (incoming gradient: ones) returned a gradient that silently was
    not differentiable, so a gradient penalty or a Hessian-vector product through the op dropped its second-order
    term, and `torch.autograd.grad(..., inputs)` never reached the error node. Here, whenever the backward builds a
    graph (create_graph=True) for inputs that need gradients, each gradient it returns goes through a node tied to the
    forward's saved tensors that require grad, which raises, naming the op, once anything differentiates it again."""
    message = (f"greyhound.{name}: its backward is not differentiable (double backward, e.g. a gradient penalty or "
               f"a Hessian-vector product through create_graph=True, is not supported); use the op's reference "
               f"(plain PyTorch) for second-order gradients")

    def decorate(backward):
        def wrapper(ctx, *grads):
            with torch.no_grad():
                outputs = backward(ctx, *grads)
            if not torch.is_grad_enabled() or not any(ctx.needs_input_grad):
                return outputs
            anchors = [t for t in ctx.saved_tensors if isinstance(t, torch.Tensor) and t.requires_grad]
            single = not isinstance(outputs, tuple)
            outputs = list((outputs,) if single else outputs)
            for i, (out, needed) in enumerate(zip(outputs, ctx.needs_input_grad)):
                if needed and isinstance(out, torch.Tensor):
                    # (without an anchor, a leaf of its own: then .backward() still reaches the error)
                    outputs[i] = _NotDifferentiableAgain.apply(
                        message, out if anchors else out.detach().requires_grad_(True), *anchors)
            return outputs[0] if single else tuple(outputs)
        return wrapper
    return decorate


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

    @once_differentiable(op._name)
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
