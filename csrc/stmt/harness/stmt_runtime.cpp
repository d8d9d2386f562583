// The runtime of C++ statement modules: built once per toolchain and torch
// (harness.measure.cpp.runtime), not compiled into every statement.
//
// A statement module is a plain shared library exporting
// `harness_stmt_module()`; this Python extension loads it (dlopen, local
// symbols, never unloaded: its routines may hold tensors) and gives Python
// what it needs: the keys, setup, reset, the sampler capsule the core times,
// and probes as DLPack capsules. Python's headers, DLPack and the module table
// live here so that no statement TU pays for them.
#include <Python.h>
#include <dlfcn.h>

#include <ATen/DLConvertor.h>

#include <string>
#include <vector>

#include "harness/stmt.h"

namespace {

using harness::stmt::Entry;
using harness::stmt::Module;

constexpr const char* kModuleCapsule = "harness.stmt_module";

const Module* module_of(PyObject* capsule) {
  return static_cast<const Module*>(PyCapsule_GetPointer(capsule, kModuleCapsule));
}

// (capsule, index) -> the entry, or nullptr with a Python error set.
const Entry* entry_of(PyObject* args) {
  PyObject* capsule = nullptr;
  Py_ssize_t i = 0;
  if (!PyArg_ParseTuple(args, "On", &capsule, &i)) return nullptr;
  const Module* m = module_of(capsule);
  if (!m) return nullptr;
  if (i < 0 || i >= m->count) {
    PyErr_Format(PyExc_IndexError, "statement index %zd out of range (module has %lld)", i,
                 static_cast<long long>(m->count));
    return nullptr;
  }
  return &m->entries[i];
}

// Run f(); a C++ exception becomes a Python RuntimeError with its message.
template <class F>
PyObject* guarded(F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception");
  }
  return nullptr;
}

void delete_module(PyObject* capsule) { delete module_of(capsule); }

PyObject* open_module(PyObject*, PyObject* arg) {
  const char* path = PyUnicode_AsUTF8(arg);
  if (!path) return nullptr;
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    PyErr_Format(PyExc_ImportError, "cannot load C++ statement module %s: %s", path, dlerror());
    return nullptr;
  }
  using Table = Module (*)();
  auto table = reinterpret_cast<Table>(dlsym(lib, "harness_stmt_module"));
  if (!table) {
    PyErr_Format(PyExc_ImportError, "%s is not a harness statement module (no harness_stmt_module)", path);
    return nullptr;
  }
  Module m = table();
  if (m.abi != harness::stmt::kAbi) {
    PyErr_Format(PyExc_ImportError, "%s was built for statement ABI %d, this runtime is %d", path, m.abi,
                 harness::stmt::kAbi);
    return nullptr;
  }
  return PyCapsule_New(new Module(m), kModuleCapsule, delete_module);
}

PyObject* describe(PyObject*, PyObject* capsule) {
  const Module* m = module_of(capsule);
  if (!m) return nullptr;
  PyObject* keys = PyTuple_New(m->count);
  if (!keys) return nullptr;
  for (int64_t i = 0; i < m->count; ++i) PyTuple_SET_ITEM(keys, i, PyUnicode_FromString(m->entries[i].key));
  return Py_BuildValue("(NOs)", keys, m->pch_used ? Py_True : Py_False, m->include_set);
}

PyObject* prepare(PyObject*, PyObject* args) {
  const Entry* e = entry_of(args);
  if (!e) return nullptr;
  return guarded([&]() -> PyObject* {
    e->slot->prepare();
    Py_RETURN_NONE;
  });
}

PyObject* reset(PyObject*, PyObject* args) {
  const Entry* e = entry_of(args);
  if (!e) return nullptr;
  e->slot->reset();
  Py_RETURN_NONE;
}

PyObject* ready(PyObject*, PyObject* args) {
  const Entry* e = entry_of(args);
  if (!e) return nullptr;
  return PyBool_FromLong(e->slot->ready());
}

PyObject* sampler(PyObject*, PyObject* args) {
  const Entry* e = entry_of(args);
  if (!e) return nullptr;
  return PyCapsule_New(reinterpret_cast<void*>(e->sample), "harness.sampler", nullptr);
}

void delete_unconsumed_dltensor(PyObject* capsule) {
  // Consumers rename the capsule to "used_dltensor" and own the tensor.
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (managed->deleter) managed->deleter(managed);
  }
}

PyObject* to_dlpack_capsule(const at::Tensor& t) {
  if (!t.defined()) Py_RETURN_NONE;
  DLManagedTensor* managed = at::toDLPack(t.detach().contiguous());
  return PyCapsule_New(managed, "dltensor", delete_unconsumed_dltensor);
}

PyObject* probe(PyObject*, PyObject* args) {
  const Entry* e = entry_of(args);
  if (!e) return nullptr;
  return guarded([&]() -> PyObject* {
    std::vector<at::Tensor> kept = e->slot->probe();
    PyObject* out = PyList_New(0);
    if (!out) return nullptr;
    for (const auto& t : kept) {
      PyObject* item = to_dlpack_capsule(t);
      if (!item || PyList_Append(out, item) != 0) {
        Py_XDECREF(item);
        Py_DECREF(out);
        return nullptr;
      }
      Py_DECREF(item);
    }
    return out;
  });
}

PyMethodDef methods[] = {
    {"open", open_module, METH_O, "Load a statement module (path); its handle."},
    {"describe", describe, METH_O, "(keys, pch_used, include_set) of a handle."},
    {"prepare", prepare, METH_VARARGS, "Run statement i's setup (once)."},
    {"reset", reset, METH_VARARGS, "Drop statement i's state."},
    {"ready", ready, METH_VARARGS, "Whether statement i is set up."},
    {"sampler", sampler, METH_VARARGS, "Native sampler capsule of statement i."},
    {"probe", probe, METH_VARARGS, "Run statement i once; its output tensors."},
    {nullptr, nullptr, 0, nullptr}};

#define HARNESS_STR2(x) #x
#define HARNESS_STR(x) HARNESS_STR2(x)
PyModuleDef definition = {PyModuleDef_HEAD_INIT, HARNESS_STR(TORCH_EXTENSION_NAME), "harness's C++ statement runtime", -1,
                          methods};

}  // namespace

#define HARNESS_CAT(a, b) a##b
#define HARNESS_INIT(name) HARNESS_CAT(PyInit_, name)
PyMODINIT_FUNC HARNESS_INIT(TORCH_EXTENSION_NAME)(void) { return PyModule_Create(&definition); }
