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
/// raises [`SpecError`] (a ValueError).
#[pyfunction]
#[pyo3(signature = (spec_json, progress=None))]
fn run<'py>(
    py: Python<'py>,
    spec_json: &str,
    progress: Option<PyObject>,
) -> PyResult<RunOutput<'py>> {
    let spec: RunSpec =
        serde_json::from_str(spec_json).map_err(|e| spec_error("spec", &e.to_string()))?;
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
        cclab_sim::run(&spec, Some(&mut cb))
    });
    if let Some(e) = py_err {
        return Err(e);
    }
    let mut result = result.map_err(|e| spec_error(&e.field, &e.message))?;
    if result.aborted {
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
    serde_json::from_str(params_json).map_err(|e| spec_error("", &format!("params: {e}")))
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
    };
    match registry::build_sender(name, &params, &env) {
        Ok(b) => Ok(b.cc.warnings()),
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
    registry::build_queue(kind, &params, &env)
        .map(|_| ())
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

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("SpecError", m.py().get_type_bound::<SpecError>())?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(validate_sender, m)?)?;
    m.add_function(wrap_pyfunction!(validate_queue, m)?)?;
    m.add_function(wrap_pyfunction!(sender_names, m)?)?;
    m.add_function(wrap_pyfunction!(queue_names, m)?)?;
    m.add_function(wrap_pyfunction!(limits, m)?)?;
    m.add_class::<gym::Stepper>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
