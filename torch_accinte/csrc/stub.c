/* The Python extension module torch_accinte._C. It holds no code of its own:
 * importing it loads libtorch_bindings.so (and through it the core and the
 * runtime), whose initModule builds the module object. */
#include <Python.h>

// LITERALINCLUDE START: OVERVIEW C STUB
extern PyObject* initModule(void);

PyMODINIT_FUNC PyInit__C(void) {
  return initModule();
}
// LITERALINCLUDE END: OVERVIEW C STUB
