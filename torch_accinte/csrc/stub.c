/* The Python extension module torch_accinte._C. It holds no code of its own:
 * importing it loads libtorch_bindings.so (and through it the core and the
 * runtime), whose torch_accinte_init_module builds the module object.
 *
 * The entry point's name carries the package's: loaded with RTLD_GLOBAL
 * (sys.setdlopenflags), libtorch_python's own exported `initModule` comes
 * first in the global scope, and a stub calling a function of that name
 * would build torch._C a second time. */
#include <Python.h>

// LITERALINCLUDE START: OVERVIEW C STUB
extern PyObject* torch_accinte_init_module(void);

PyMODINIT_FUNC PyInit__C(void) {
  return torch_accinte_init_module();
}
// LITERALINCLUDE END: OVERVIEW C STUB
