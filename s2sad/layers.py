"""The layers of s2sad, lowest first: a module imports only from its own layer or lower.

tests/test_layers.py reads every import in s2sad/ (at module level and inside functions)
and holds the code to this table; docs/design.md ("Layers") states the same rule. A new
module gets a row here, or that test fails.

Invariants the test checks:
- an import never runs up a layer;
- no import cycle among modules, nor among folders (passes/, codegen/, backends/ and
  array_prims/ each taken as one unit);
- product code (every layer below "tools") never imports golden/ or tests/;
- no private `_name` is imported from (or read as an attribute of) another s2sad module;
- an import inside a function is one of `LAZY_INTERNAL` (a module whose import cost only
  some calls pay) or of an optional heavy package (`LAZY_EXTERNAL`), never a way around
  a cycle.

This module imports nothing: it is a table, read by the test and by people.
"""

# (layer, modules, why they sit there). A name ending in ".*" is every module of a folder.
LAYERS = (
    ("ir", ("s2sad.errors", "s2sad.locks", "s2sad.parsing", "s2sad.kernel", "s2sad.kernel_text", "s2sad.marks", "s2sad.deep", "s2sad.tree",
            "s2sad.layers", "s2sad.envflags"),
     "what every layer speaks: located errors, fork-safe locks, the S2SAD_* switches read (envflags), the core scalar language and "
     "loop specs (kernel) and its text (kernel_text), s2sad's marks on its own functions, "
     "the bounded recursion of deep trees"),
    ("rules", ("s2sad.rules", "s2sad.special", "s2sad.ewfuncs", "s2sad.smath", "s2sad.array_prims.*"),
     "the tables of primitives (scalar partials; array primitives, their typed ops, VJP texts "
     "and the user's defvjp rules), the special functions written in the kernel language "
     "(special) and the math kernels run with; below the frontend because "
     "frontend.classify recognises a value as a primitive by the scalar table"),
    ("frontend", ("s2sad.frontend", "s2sad.assumptions", "s2sad.sourcecheck", "s2sad.forwarders", "s2sad.defaults",
                  "s2sad.callables", "s2sad.targets", "s2sad.nested", "s2sad.paramuses", "s2sad.freedata"),
     "a Python function -> its parsed tree with names resolved; what an entry point is given "
     "(targets) and the calls it binds (defaults)"),
    ("passes", ("s2sad.passes.*",),
     "tree -> core language, duals, a kernel's planned program (kernelplan), array programs "
     "(arrayir, primcalls, kernelpairs), adjoint source"),
    ("codegen", ("s2sad.codegen.*",),
     "core language -> Python, LLVM IR and machine code, CUDA C; the disk cache"),
    ("backends", ("s2sad.backends.*",),
     "where kernels run: python, llvm, cuda behind one protocol, chosen once per call; a "
     "launch's inputs laid out (arrays), which array module an array belongs to (arraymodule)"),
    ("runtime", ("s2sad.loopserver", "s2sad.mempool", "s2sad.sigmatch", "s2sad.threads", "s2sad.threadchoice", "s2sad.twocalls", "s2sad.runkernel", "s2sad.fastpath", "s2sad.scans", "s2sad.zerograds", "s2sad.runtime", "s2sad.blockloop", "s2sad.gemm", "s2sad.reduce", "s2sad.rowthreads", "s2sad.rowsoftmax", "s2sad.rowlayernorm", "s2sad.productsums", "s2sad.array_rules", "s2sad.gemm_outpartials", "s2sad.gemm_epilogue", "s2sad.xent_head", "s2sad.outer_kernel", "s2sad.shape_helpers",
                 "s2sad.blas_calls", "s2sad.linalg_base", "s2sad.linalg_norm", "s2sad.linalg_more", "s2sad.linalg_rules",
                 "s2sad.product_rules", "s2sad.reduction_rules", "s2sad.softmax_rules",
                 "s2sad.column_products", "s2sad.hvp_columns", "s2sad.batch_rules", "s2sad.batch_vjps", "s2sad.derivative_runtime"),
     "kernels applied over arrays: warm memory for a call's arrays (mempool); a call's signature matched in machine code (sigmatch); a kernel's launch caches (runkernel), the lean llvm paths "
     "(fastpath), state-passing kernels (scans), gradients that are zero by the rules made as zeros (zerograds), layouts, the index space, threads and their count chosen by timing (threadchoice), two independent calls side by side (twocalls); a block pass's C calls made by one compiled loop (blockloop); matrix products and "
     "reductions; the helpers generated adjoints call (array_rules) and the rest of what "
     "they run on (derivative_runtime)"),
    ("plan", ("s2sad.plancache", "s2sad.arguments", "s2sad.plans", "s2sad.program_tail", "s2sad.array_program", "s2sad.straight_line", "s2sad.times_site", "s2sad.array_special", "s2sad.array_hot", "s2sad.derivative", "s2sad.jvp_vjp",
              "s2sad.treefast", "s2sad.treecalls", "s2sad.dask_grad", "s2sad.dask_blocks", "s2sad.dask_tasks", "s2sad.array_higher", "s2sad.first_order",
              "s2sad.jacdiag", "s2sad.batched_jac", "s2sad.batched_rows", "s2sad.small_hessian", "s2sad.small_jacobian",
              "s2sad.small_grad", "s2sad.tree_higher"),
     "plans found by the code of the function called (plancache), made and served (plans); "
     "the user's arguments checked and gradients shaped (arguments); the generated "
     "derivative grad runs (derivative) and its hot path for array programs (array_hot), specialised per signature (array_special; which derivatives may be: straight_line), one compiled call where every site is compiled work (array_program; a value_and_grad's value after it: program_tail); jvp and vjp through a plan (jvp_vjp); jvp of an "
     "array program's gradient, forward over reverse (array_higher); the Jacobian of an elementwise map from one gradient (jacdiag); Hessians and Jacobians of array programs from one sweep of batched tangents (batched_jac) or of batched cotangents (batched_rows); the Hessian, the Jacobian and the gradient of a small fixed-shape program in one call (small_hessian, small_jacobian, small_grad)"),
    ("api", ("s2sad.rebind", "s2sad.broadcasting", "s2sad.api", "s2sad.higher_paths", "s2sad.jacobian_paths", "s2sad.higher", "s2sad.higher_explain"),
     "the user's entry points (broadcasting: s2sad.broadcast; rebind: a derivative of a bound callable differentiated again as the derivative of its plain function); Jacobians and Hessians built on them (higher: each a table of paths, higher_paths runs it, jacobian_paths the paths) and which path each level took (higher_explain)"),
    ("tools", ("s2sad", "s2sad.__main__", "s2sad.cli", "s2sad.golden", "s2sad.coverage"),
     "the package's face, the command line, the golden files"),
)

# imports of s2sad modules that stay inside functions, each for a reason other than a cycle
# (importer, imported): why
LAZY_INTERNAL = {
    ("s2sad.codegen.llvm_jit", "s2sad.codegen.llvm_drivers"):
        "IR is rendered only on a cache miss: a warm start maps cached code without it (test_cache)",
    ("s2sad.codegen.llvm_jit", "s2sad.codegen.llvm_lower"): "as llvm_drivers",
    ("s2sad.codegen.llvm_jit", "s2sad.codegen.llvm_entry"): "as llvm_drivers",
    ("s2sad.codegen.llvm_jit", "s2sad.codegen.llvm_gemm"): "as llvm_drivers",
    ("s2sad.codegen.llvm_jit", "s2sad.codegen.llvm_reduce"): "as llvm_drivers",
    ("s2sad.codegen.llvm_jit", "s2sad.codegen.llvm_rows"): "as llvm_drivers",
    ("s2sad.small_hessian", "s2sad.codegen.llvm_entry"):
        "it imports the drivers' lowering, which `import s2sad` and a warm start of grad do not pay (test_cache)",
    ("s2sad.small_hessian", "s2sad.codegen.llvm_small"): "as llvm_entry (it imports llvm_entry)",
}

# optional or costly packages a function may import when it needs them (top-level names)
LAZY_EXTERNAL = {
    "llvmlite": "30-100 ms to import; a warm start runs cached machine code without it",
    "cupy": "optional (s2sad[cuda]); only when an array is on the device",
    "cuda": "cuda.bindings, optional: NVRTC for the CUDA backend's checks",
    "scipy": "optional",
    "dask": "optional",
    "cloudpickle": "dask's dependency (optional with it): only when dask pickles a task's loss",
    "mpmath": "the maintenance tool that refits vecmath's polynomials",
    "secrets": "1-2 ms; only when the cache key is first made",
    "ctypes": "ctypes.util.find_library may run ldconfig: only when libmvec is looked for",
}


def layer_of(module: str) -> int | None:
    """The index in LAYERS of `module` (a dotted name), or None when no row names it."""
    for i, (_, modules, _) in enumerate(LAYERS):
        for m in modules:
            if module == m or (m.endswith(".*") and (module == m[:-2] or module.startswith(m[:-1]))):
                return i
    return None
