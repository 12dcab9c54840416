"""Provider registry: which packages a provider needs. Third-party providers are optional imports: when their package
is missing the benchmark is skipped (asv shows n/a) and the run goes on."""
import importlib
import importlib.util

# provider name (lower-case package name, as in the CSV) -> importable module it needs
THIRD_PARTY = {
    "liger": "liger_kernel",
    "fla": "fla",
    "cut-cross-entropy": "cut_cross_entropy",
    "quack": "quack",  # needs nvidia-cutlass-dsl; its CUDA 13 libs do not fit a device call (see docs/benchmarking.md)
    "causal-conv1d": "causal_conv1d",  # Tri Dao's CUDA package; its source build does not fit an offline H200 call
    "dion": "dion",
    "gram-newton-schulz": "gram_newton_schulz",  # its CuTe backend (needs quack)
    "gram-newton-schulz-torch": "gram_newton_schulz",  # its pure-PyTorch backend (installs with --no-deps)
}
BUILT_IN = ("greyhound", "torch-eager", "torch-compile")


def available(provider):
    module = THIRD_PARTY.get(provider)
    if module is None:
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(provider):
    """Raise NotImplementedError (asv: skipped) when a third-party provider's package is not installed."""
    if provider not in THIRD_PARTY and not provider.startswith(BUILT_IN):
        raise ValueError(f"provider must be one of {BUILT_IN + tuple(THIRD_PARTY)} (or a greyhound-* path), "
                         f"got {provider!r}")
    if not available(provider):
        raise NotImplementedError(f"{provider}: package {THIRD_PARTY[provider]!r} is not installed")


def load(provider):
    """Import and return a third-party provider's package (after `require`)."""
    require(provider)
    return importlib.import_module(THIRD_PARTY[provider])
