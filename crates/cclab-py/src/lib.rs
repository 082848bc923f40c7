//! PyO3 bindings: the private module `cclab._native`. The public, typed API is the pure-Python
//! package `cclab`; this module only moves a run spec in and results out (time series as NumPy arrays,
//! never a per-packet callback).

// pyo3 0.22's #[pyfunction] expansion converts PyErr into PyErr; clippy 1.95 flags that inside the macro.
#![allow(clippy::useless_conversion)]

mod gym;

use cclab_cc::aqm::BufferLimit;
use cclab_cc::params::Params;
use cclab_cc::registry::{self, LinkEnv, SenderEnv};
use cclab_sim::result::{Series, Trace};
use cclab_spec::RunSpec;
use numpy::IntoPyArray;
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

create_exception!(
    _native,
    SpecError,
    PyValueError,
    "A run spec, algorithm or queue discipline the core rejects: `field` names what is wrong (a path \
     into the run spec such as \"flows[2].transport\", a parameter name, or \"\"), `message` says why."
);

/// A [`SpecError`] carrying `field` and `message` as attributes; its text is "field: message".
fn spec_error(field: &str, message: &str) -> PyErr {
    Python::with_gil(|py| {
        let text = if field.is_empty() {
            message.to_string()
        } else {
            format!("{field}: {message}")
        };
        let err = SpecError::new_err(text);
        let value = err.value_bound(py);
        match value
            .setattr("field", field)
            .and_then(|()| value.setattr("message", message))
        {
            Ok(()) => err,
            Err(e) => e,
        }
    })
}

/// A serde error without its position in the JSON text ("… at line 1 column 2280"): the JSON was
/// written by the front door, not by the user, so the position means nothing to them.
fn json_error(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// Parses a run spec; a spec the types reject is a [`SpecError`] with field "spec".
fn parse_spec(spec_json: &str) -> PyResult<RunSpec> {
    serde_json::from_str(spec_json).map_err(|e| spec_error("spec", &json_error(&e)))
}

thread_local! {
    /// The last panic on this thread: its message and where (set by the hook [`quiet_panics`]
    /// installs), so that [`guard`] can report it.
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Replaces the panic hook of this library (its own copy of std) with one that records the panic
/// for [`guard`] instead of printing it: a panic reaches the user as one Python exception, not as a
/// Rust backtrace on stderr. `CCLAB_DEBUG=1` keeps the default hook's output as well.
fn quiet_panics() {
    let default = std::panic::take_hook();
    let debug = std::env::var_os("CCLAB_DEBUG").is_some_and(|v| !v.is_empty() && v != "0");
    std::panic::set_hook(Box::new(move |info| {
        let msg = if let Some(s) = info.payload().downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = info.payload().downcast_ref::<String>() {
            s.clone()
        } else {
            "panic".to_string()
        };
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("{msg}{at}")));
        if debug {
            default(info);
        }
    }));
}

/// Runs `f`, turning a panic into a RuntimeError ("internal error: … (please report)"), which
/// `except Exception` catches (pyo3's own PanicException derives from BaseException). Nothing a
/// user can write should panic: `RunSpec::validate` bounds every input first; this is the net under
/// whatever it missed.
fn guard<T>(f: impl FnOnce() -> T) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|_| {
        let msg = LAST_PANIC
            .with(|p| p.borrow_mut().take())
            .unwrap_or_else(|| "a panic in the simulator".to_string());
        PyRuntimeError::new_err(format!(
            "internal error: {msg} (a bug in cclab, please report it with the scenario)"
        ))
    })
}

fn series_dict<'py>(py: Python<'py>, s: Series) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new_bound(py);
    for (k, v) in s.columns {
        d.set_item(k, v.into_pyarray_bound(py))?;
    }
    Ok(d)
}

/// The packet trace as columns of NumPy arrays (t f64, kind u8, link i32, flow i32, seq u64, pkt u8):
/// each column moves into its array without a copy or an object per record.
fn trace_dict(py: Python<'_>, tr: Trace) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new_bound(py);
    d.set_item("t", tr.t.into_pyarray_bound(py))?;
    d.set_item("kind", tr.kind.into_pyarray_bound(py))?;
    d.set_item("link", tr.link.into_pyarray_bound(py))?;
    d.set_item("flow", tr.flow.into_pyarray_bound(py))?;
    d.set_item("seq", tr.seq.into_pyarray_bound(py))?;
    d.set_item("pkt", tr.pkt.into_pyarray_bound(py))?;
    Ok(d)
}

/// What [`run`] returns: (result JSON, flow series, link series, packet trace or None).
type RunOutput<'py> = (
    String,
    Bound<'py, PyDict>,
    Bound<'py, PyDict>,
    Option<Bound<'py, PyDict>>,
);

/// Runs a simulation from a JSON run spec. Returns (result JSON without the series and the trace, flow
/// series, link series, packet trace columns or None when the spec has no `trace_packets`). The GIL is released for the whole run; it is taken again only inside the progress callback,
/// which the simulator calls at most every ~0.25 s of wall time. There `progress(sim_time_s)` runs and
/// pending signals are checked, so Ctrl-C stops the run within ~0.25 s and raises KeyboardInterrupt.
/// An exception raised by `progress` stops the run and is re-raised. A spec the simulator rejects
/// raises [`SpecError`] (a ValueError). A run that goes over its budget stops and returns what it
/// measured until then, with `stopped` (field, message, time, memory) in the result JSON.
#[pyfunction]
#[pyo3(signature = (spec_json, progress=None))]
fn run<'py>(
    py: Python<'py>,
    spec_json: &str,
    progress: Option<PyObject>,
) -> PyResult<RunOutput<'py>> {
    let spec = parse_spec(spec_json)?;
    let mut py_err: Option<PyErr> = None;
    let result = py.allow_threads(|| {
        let mut cb = |t: f64| -> bool {
            Python::with_gil(|py| {
                let step = py.check_signals().and_then(|()| match &progress {
                    Some(p) => p.call1(py, (t,)).map(|_| ()),
                    None => Ok(()),
                });
                match step {
                    Ok(()) => true,
                    Err(e) => {
                        py_err = Some(e);
                        false
                    }
                }
            })
        };
        // Not `cclab_sim::run`, which turns a stop at the budget into an error: the partial result
        // is returned, with `stopped` in its JSON, for the caller to keep and then report.
        guard(|| cclab_sim::Simulation::new(&spec).map(|sim| sim.run(Some(&mut cb))))
    });
    if let Some(e) = py_err {
        return Err(e);
    }
    let result = result?;
    let mut result = result.map_err(|e| spec_error(&e.field, &e.message))?;
    if result.aborted && result.stopped.is_none() {
        return Err(PyRuntimeError::new_err("simulation aborted"));
    }
    let flows = series_dict(py, std::mem::take(&mut result.flow_series))?;
    let links = series_dict(py, std::mem::take(&mut result.link_series))?;
    let trace = std::mem::take(&mut result.trace);
    let trace = if spec.trace_packets {
        Some(trace_dict(py, trace)?)
    } else {
        None
    };
    let summary =
        serde_json::to_string(&result).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    Ok((summary, flows, links, trace))
}

fn parse_params(params_json: &str) -> PyResult<Params> {
    serde_json::from_str(params_json)
        .map_err(|e| spec_error("", &format!("params: {}", json_error(&e))))
}

/// Checks a run spec exactly as `run` would before simulating: `RunSpec::validate` (values, paths,
/// bounds, the budget) and then building the simulation (every algorithm and queue discipline with
/// its parameters), without running it. Returns the algorithms' warnings; raises [`SpecError`].
/// With `build=false`, only `RunSpec::validate` (the real datapath's specs name kernel TCP flows,
/// which the simulator cannot build).
#[pyfunction]
#[pyo3(signature = (spec_json, build=true))]
fn validate_spec(py: Python<'_>, spec_json: &str, build: bool) -> PyResult<Vec<String>> {
    let spec = parse_spec(spec_json)?;
    let checked = py.allow_threads(|| {
        guard(|| {
            if build {
                cclab_sim::Simulation::new(&spec).map(|s| s.warnings())
            } else {
                spec.validate().map(|()| Vec::new())
            }
        })
    })?;
    checked.map_err(|e| spec_error(&e.field, &e.message))
}

/// What running a spec is estimated to need (`cclab_spec::estimate::estimate`): memory (bytes) and its
/// terms, events, packet transmissions, packets in flight, time-series rows, trace records, and the
/// budget the spec runs under.
#[pyfunction]
fn estimate(py: Python<'_>, spec_json: &str) -> PyResult<PyObject> {
    let spec = parse_spec(spec_json)?;
    let e = guard(|| cclab_spec::estimate::estimate(&spec))?;
    let budget = spec.limits.unwrap_or_default();
    let d = PyDict::new_bound(py);
    for (k, v) in [
        ("memory", e.memory),
        ("events", e.events),
        ("packets", e.packets),
        ("in_flight", e.in_flight),
        ("series_rows", e.series_rows),
        ("trace_records", e.trace_records),
        ("memory_state", e.memory_state),
        ("memory_series", e.memory_series),
        ("memory_packets", e.memory_packets),
        ("memory_trace", e.memory_trace),
        ("memory_transfers", e.memory_transfers),
        ("memory_logs", e.memory_logs),
        ("transfers_running", e.transfers_running),
    ] {
        d.set_item(k, v)?;
    }
    d.set_item("max_memory", budget.max_memory)?;
    d.set_item("max_events", budget.max_events)?;
    Ok(d.into_any().unbind())
}

/// Checks an algorithm name and its parameters; raises [`SpecError`] (`field`: "cc" or the parameter).
#[pyfunction]
#[pyo3(signature = (name, params_json, mss=1448, packet_size=1500, initial_cwnd=10.0))]
fn validate_sender(
    name: &str,
    params_json: &str,
    mss: u32,
    packet_size: u32,
    initial_cwnd: f64,
) -> PyResult<Vec<String>> {
    let params = parse_params(params_json)?;
    // Validation only: the seed does not affect whether a configuration is valid.
    let env = SenderEnv {
        mss,
        packet_size,
        initial_cwnd,
        seed: 0,
        hystart: false,
    };
    match guard(|| registry::build_sender(name, &params, &env).map(|b| b.cc.warnings()))? {
        Ok(w) => Ok(w),
        Err(e) => Err(spec_error(&e.field, &e.message)),
    }
}

/// Checks a queue discipline name and its parameters; raises [`SpecError`] (`field`: "queue" or the
/// parameter).
#[pyfunction]
#[pyo3(signature = (kind, params_json, rate_bps, buffer_pkts=None, buffer_bytes=None, packet_size=1500))]
fn validate_queue(
    kind: &str,
    params_json: &str,
    rate_bps: f64,
    buffer_pkts: Option<u32>,
    buffer_bytes: Option<u64>,
    packet_size: u32,
) -> PyResult<()> {
    let params = parse_params(params_json)?;
    let env = LinkEnv {
        rate_bps,
        limit: BufferLimit {
            pkts: buffer_pkts,
            bytes: buffer_bytes,
        },
        packet_size,
    };
    guard(|| registry::build_queue(kind, &params, &env).map(|_| ()))?
        .map_err(|e| spec_error(&e.field, &e.message))
}

#[pyfunction]
fn sender_names() -> Vec<&'static str> {
    registry::SENDER_NAMES.to_vec()
}

#[pyfunction]
fn queue_names() -> Vec<&'static str> {
    registry::QUEUE_NAMES.to_vec()
}

/// The run spec's limits by name (`cclab_spec::limits`), for the Python front door's checks.
#[pyfunction]
fn limits() -> std::collections::BTreeMap<&'static str, u64> {
    cclab_spec::limits::ALL.iter().copied().collect()
}

/// Panics with `message` inside [`guard`]: for the tests of the "no panic reaches Python" contract
/// (private: not part of the API).
#[pyfunction]
fn _panic(message: &str) -> PyResult<()> {
    guard(|| panic!("{message}"))
}

/// Runs a JSON run spec and returns its result's golden digest (`RunResult::golden_digest`), for
/// the test that holds this module, built with the distribution's flags (LTO, a profile), to the
/// digests the Rust tests record (private: not part of the API).
#[pyfunction]
fn _golden_digest(py: Python<'_>, spec_json: &str) -> PyResult<String> {
    let spec = parse_spec(spec_json)?;
    let result = py.allow_threads(|| guard(|| cclab_sim::run(&spec, None)))?;
    let result = result.map_err(|e| spec_error(&e.field, &e.message))?;
    Ok(result.golden_digest())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    quiet_panics();
    m.add("SpecError", m.py().get_type_bound::<SpecError>())?;
    m.add_function(wrap_pyfunction!(validate_spec, m)?)?;
    m.add_function(wrap_pyfunction!(_panic, m)?)?;
    m.add_function(wrap_pyfunction!(_golden_digest, m)?)?;
    m.add_function(wrap_pyfunction!(estimate, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(validate_sender, m)?)?;
    m.add_function(wrap_pyfunction!(validate_queue, m)?)?;
    m.add_function(wrap_pyfunction!(sender_names, m)?)?;
    m.add_function(wrap_pyfunction!(queue_names, m)?)?;
    m.add_function(wrap_pyfunction!(limits, m)?)?;
    m.add_class::<gym::Stepper>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The digest of the engine's sources (build.rs): which code makes a run's results, wherever it was built.
    m.add("ENGINE_ID", env!("CCLAB_ENGINE_ID"))?;
    Ok(())
}
