// harness._C: converts and forwards to the core; no policy lives here.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>

#include "harness/harness.h"

namespace py = pybind11;

namespace {

// Times fn(*args, **kwargs) from a C++ loop: no Python bytecode of ours runs
// between the two clock reads.
struct CallLoop {
  py::object fn;
  py::tuple args;
  py::dict kwargs;

  int64_t operator()(int64_t number) const {
    PyObject* f = fn.ptr();
    PyObject* a = args.ptr();
    PyObject* k = kwargs.size() ? kwargs.ptr() : nullptr;
    const bool no_args = PyTuple_GET_SIZE(a) == 0 && k == nullptr;
    const int64_t t0 = harness::now_ns();
    for (int64_t i = 0; i < number; ++i) {
      PyObject* r = no_args ? PyObject_CallNoArgs(f) : PyObject_Call(f, a, k);
      if (r == nullptr) throw py::error_already_set();
      Py_DECREF(r);
    }
    return harness::now_ns() - t0;
  }
};

// A native sampler exported by a generated C++ statement module.
using NativeSamplerFn = int64_t (*)(int64_t);
constexpr const char* kSamplerCapsule = "harness.sampler";

harness::Sampler to_sampler(const py::object& obj) {
  if (py::isinstance<CallLoop>(obj)) {
    const CallLoop* loop = obj.cast<const CallLoop*>();
    return [loop](int64_t n) { return (*loop)(n); };
  }
  if (PyCapsule_CheckExact(obj.ptr()) && PyCapsule_IsValid(obj.ptr(), kSamplerCapsule)) {
    auto fn = reinterpret_cast<NativeSamplerFn>(PyCapsule_GetPointer(obj.ptr(), kSamplerCapsule));
    return [fn](int64_t n) { return fn(n); };
  }
  if (!PyCallable_Check(obj.ptr())) {
    throw py::type_error("sampler must be callable(number) -> elapsed ns");
  }
  return [obj](int64_t n) { return obj(n).cast<int64_t>(); };
}

// Fixed native bodies for testing instruction counting without compiling a
// C++ statement: K additions per run as straight-line code on a volatile, so
// every addition is the same load-add-store whatever K is.
template <int K>
inline void add_k(volatile int64_t& acc) {
  if constexpr (K > 0) {
    acc = acc + 1;
    add_k<K - 1>(acc);
  }
}

template <int K>
int64_t add_loop(int64_t number) {
  const int64_t t0 = harness::now_ns();
  for (int64_t i = 0; i < number; ++i) {
    volatile int64_t acc = i;
    add_k<K>(acc);
  }
  return harness::now_ns() - t0;
}

py::capsule test_sampler(const std::string& name) {
  NativeSamplerFn fn = nullptr;
  if (name == "add0") fn = &add_loop<0>;
  if (name == "add1") fn = &add_loop<1>;
  if (name == "add10") fn = &add_loop<10>;
  if (fn == nullptr) throw py::value_error("test_sampler: name must be add0, add1 or add10, got " + name);
  return py::capsule(reinterpret_cast<void*>(fn), kSamplerCapsule);
}

harness::BlockCallback to_callback(const py::object& cb) {
  if (cb.is_none()) return nullptr;
  return [cb](int64_t number, int64_t ns) { cb(number, ns); };
}

py::tuple blocks_tuple(const harness::Blocks& b) {
  return py::make_tuple(b.number_per_run, b.raw_ns);
}

py::dict stats_dict(const harness::Stats& s) {
  py::dict d;
  d["n"] = s.n;
  d["min"] = s.min;
  d["max"] = s.max;
  d["mean"] = s.mean;
  d["stddev"] = s.stddev;
  d["p25"] = s.p25;
  d["median"] = s.median;
  d["p75"] = s.p75;
  d["iqr"] = s.iqr();
  return d;
}

}  // namespace

// A zygote's loop: one fork per byte read on ctl_fd, and nothing else. Written
// in C so that the process every measurement forks from runs no Python between
// forks: not one allocation, so every child starts from the same heap.
// status_fd gets {0, pid, 0} when a child starts and {1, pid, wait status} when
// it ends (fixed-size writes, atomic on a pipe). Returns 0 in each child, -1
// in the zygote when ctl_fd closes.
void write_status(int fd, int32_t kind, int32_t pid, int32_t status) {
  const int32_t msg[3] = {kind, pid, status};
  while (write(fd, msg, sizeof msg) < 0 && errno == EINTR) {
  }
}

// In a process just forked: SIGKILL when the thread that forked it ends. A fork does not inherit
// the signal, and a parent already gone would never send it, so whether `parent` is still this
// process's parent is checked once it is set. It allocates nothing: a zygote's child calls it before
// anything else, and a counting child (harness.measure.callgrind.counter) just before its count.
bool tether_to(pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  return getppid() == parent;
}

int zygote_loop(int ctl_fd, int status_fd) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // the zygote goes when the worker that forked it goes
  for (;;) {
    char byte = 0;
    ssize_t n;
    do {
      n = read(ctl_fd, &byte, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) return -1;
    const pid_t zygote = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
      if (!tether_to(zygote)) _exit(1);
      PyOS_AfterFork_Child();
      return 0;
    }
    if (pid < 0) {
      write_status(status_fd, 1, -errno, 0);
      continue;
    }
    write_status(status_fd, 0, pid, 0);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    write_status(status_fd, 1, pid, status);
  }
}

PYBIND11_MODULE(_C, m) {
  m.doc() = "harness C++ timing core";
  py::register_exception<harness::invalid_argument>(m, "InvalidArgument", PyExc_ValueError);

  m.def("now_ns", &harness::now_ns, "Monotonic clock, ns.");
  m.def("clock_resolution_ns", &harness::clock_resolution_ns);
  m.def("clock_read_cost_ns", &harness::clock_read_cost_ns, py::arg("reads") = 10000);
  m.def("empty_loop_cost_ns", &harness::empty_loop_cost_ns, py::arg("iterations") = 10'000'000,
        "Per-iteration ns of the C++ loop with an empty body.");
  m.def("compute_stats", [](std::vector<double> xs) { return stats_dict(harness::compute_stats(std::move(xs))); });
  m.def("quantile", [](std::vector<double> xs, double q) {
    std::sort(xs.begin(), xs.end());
    return harness::quantile_sorted(xs, q);
  });

  py::class_<CallLoop>(m, "CallLoop")
      .def(py::init([](py::object fn, py::tuple args, py::dict kwargs) {
             if (!PyCallable_Check(fn.ptr())) throw py::type_error("fn must be callable");
             return CallLoop{std::move(fn), std::move(args), std::move(kwargs)};
           }),
           py::arg("fn"), py::arg("args") = py::tuple(), py::arg("kwargs") = py::dict())
      .def("__call__", &CallLoop::operator(), py::arg("number"),
           "Run fn number times from C++; return elapsed ns.");

  m.def(
      "fixed_blocks",
      [](const py::object& sampler, int64_t number, int64_t repeats) {
        return blocks_tuple(harness::fixed_blocks(to_sampler(sampler), number, repeats));
      },
      py::arg("sampler"), py::arg("number"), py::arg("repeats") = 1);
  m.def(
      "estimate_block_size",
      [](const py::object& sampler, double min_block_s) {
        return harness::estimate_block_size(to_sampler(sampler), min_block_s * 1e9);
      },
      py::arg("sampler"), py::arg("min_block_s"));
  m.def(
      "blocked_autorange",
      [](const py::object& sampler, double min_run_time_s, const py::object& callback) {
        return blocks_tuple(
            harness::blocked_autorange(to_sampler(sampler), min_run_time_s * 1e9, to_callback(callback)));
      },
      py::arg("sampler"), py::arg("min_run_time_s"), py::arg("callback") = py::none());
  m.def(
      "adaptive_autorange",
      [](const py::object& sampler, double threshold, double min_run_time_s, double max_run_time_s,
         const py::object& callback) {
        return blocks_tuple(harness::adaptive_autorange(to_sampler(sampler), threshold, min_run_time_s * 1e9,
                                                        max_run_time_s * 1e9, to_callback(callback)));
      },
      py::arg("sampler"), py::arg("threshold"), py::arg("min_run_time_s"), py::arg("max_run_time_s"),
      py::arg("callback") = py::none());

  auto cg = m.def_submodule("callgrind", "Callgrind region markers (no-ops outside valgrind).");
  cg.def("running_on_valgrind", &harness::callgrind::running_on_valgrind);
  cg.def("region_begin", &harness::callgrind::region_begin);
  cg.def("region_end", &harness::callgrind::region_end);
  cg.def("zero_stats", &harness::callgrind::zero_stats);
  cg.def("dump_stats", [](const std::string& reason) { harness::callgrind::dump_stats(reason.c_str()); });
  cg.def("stop_instrumentation", &harness::callgrind::stop_instrumentation);
  cg.def("start_instrumentation", &harness::callgrind::start_instrumentation);
  cg.def("toggle_region", &harness::callgrind::toggle_region,
         "Begin a region outside one, end it inside one; returns 0 (a clock for generated blocks).");
  cg.def(
      "count_call", [](const py::object& fn) { harness::callgrind::in_region([&] { fn(); }); }, py::arg("fn"),
      "Call fn() with collection on around exactly that call.");
  cg.def(
      "run_sampler",
      [](const py::object& sampler, int64_t number) {
        const bool native = PyCapsule_CheckExact(sampler.ptr()) && PyCapsule_IsValid(sampler.ptr(), kSamplerCapsule);
        const harness::Sampler s = to_sampler(sampler);
        if (native) {
          // A C++ statement runs without the GIL anyway (it releases it when
          // held); releasing it here, outside the region, keeps CPython's GIL
          // hand-off out of the statement's count and its GIL layer at zero.
          py::gil_scoped_release released;
          return harness::callgrind::in_region(s, number);
        }
        return harness::callgrind::in_region(s, number);
      },
      py::arg("sampler"), py::arg("number"), "Run sampler(number) with collection on around exactly that call.");

  m.def(
      "die_with_parent",
      [](int parent) {
        if (!tether_to(parent)) _exit(1);
      },
      py::arg("parent"),
      "In a process just forked by `parent`: be killed (SIGKILL) when the thread that forked it ends; "
      "exit at once (status 1) when `parent` is already gone.");
  m.def("zygote_loop", &zygote_loop, py::arg("ctl_fd"), py::arg("status_fd"),
        "Fork a child per byte read on ctl_fd, reporting on status_fd; returns 0 in each child, -1 at EOF.");

  m.def("test_sampler", &test_sampler, py::arg("name"),
        "A native 'harness.sampler' capsule running k additions per run (add0, add1, add10), for tests.");

  auto perf = m.def_submodule("perf", "The hardware instruction counter (Linux perf_event_open).");
  py::class_<harness::perf::InstructionCounter>(perf, "InstructionCounter")
      .def_property_readonly("ok", &harness::perf::InstructionCounter::ok)
      .def_property_readonly("reason", &harness::perf::InstructionCounter::reason)
      .def("toggle", &harness::perf::InstructionCounter::toggle,
           "Start counting when stopped, else stop (see last); returns 0 (a clock for generated blocks).")
      .def_property_readonly("last", &harness::perf::InstructionCounter::last,
                             "Count of the last toggle() pair; -1 when multiplexed.")
      .def(
          "count", [](harness::perf::InstructionCounter& c, const py::object& fn) { return c.count([&] { fn(); }); },
          py::arg("fn"), "Instructions this thread retired in fn(); -1 when the counter was multiplexed.")
      .def(
          "count_sampler",
          [](harness::perf::InstructionCounter& c, const py::object& sampler, int64_t number) {
            const harness::Sampler s = to_sampler(sampler);
            return c.count(s, number);
          },
          py::arg("sampler"), py::arg("number"));
  perf.def("open", &harness::perf::InstructionCounter::open,
           "Open this thread's instruction counter; .ok is False (with .reason) where it cannot be used.");
}
