//! Every parameter an algorithm accepts is named (in backticks) on its page under `docs/algorithms/`,
//! which is what users read to find it. The accepted names come from the registry's own "unknown
//! parameter" message, so a parameter added in code without a line in the docs fails here.

use cclab_cc::params::{ParamValue, Params};
use cclab_cc::registry::{build_sender, SenderEnv, SENDER_NAMES};
use std::path::Path;

/// The page documenting `name` (the Reno family and the binomial family share one page each).
fn page(name: &str) -> &str {
    match name {
        "reno" | "sack" => "newreno",
        "iiad" | "sqrt" => "binomial",
        other => other,
    }
}

#[test]
fn every_algorithm_parameter_is_on_its_docs_page() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/algorithms");
    let mut bogus = Params::new();
    bogus.insert("zz_not_a_parameter".into(), ParamValue::Num(1.0));
    let mut missing = Vec::new();
    for &name in SENDER_NAMES {
        let e = match build_sender(name, &bogus, &SenderEnv::default()) {
            Err(e) => e,
            Ok(_) => panic!("{name} accepted an unknown parameter"),
        };
        let allowed = e
            .message
            .split("allowed: ")
            .nth(1)
            .unwrap_or_else(|| panic!("{name}: no allowed list in {:?}", e.message));
        let path = docs.join(format!("{}.md", page(name)));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|err| panic!("{name}: {}: {err}", path.display()));
        for p in allowed.split(", ").filter(|p| *p != "none") {
            if !text.contains(&format!("`{p}`")) {
                missing.push(format!("{name}: `{p}` not in {}", path.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "undocumented parameters:\n{}",
        missing.join("\n")
    );
}
