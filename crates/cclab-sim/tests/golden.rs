//! Golden results: every spec in `tests/golden/specs/` (the shipped scenarios shortened, every sender
//! algorithm, a packet trace) is run and its whole result (time series, counters, trace, warnings),
//! serialised to JSON, must hash to the digest recorded in `tests/golden/digests.txt`
//! ([`cclab_sim::RunResult::golden_digest`] says what is hashed).
//!
//! Why: the determinism tests compare two runs of the same build; this one compares a build with the
//! build that recorded the digests, so a refactoring that claims "no behaviour change" is checked byte
//! for byte. A change that moves results on purpose re-records the digests
//! (`CCLAB_GOLDEN_UPDATE=1 cargo test --release -p cclab-sim --test golden`) and its commit says why.
//! The specs themselves come from `tests/golden/make_specs.py` (the Python front end's resolution).

use std::collections::BTreeMap;
use std::path::Path;

#[test]
fn results_match_recorded_digests() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut names: Vec<_> = std::fs::read_dir(dir.join("specs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    names.sort();
    assert!(names.len() >= 20, "golden specs missing: {}", names.len());
    let mut got = BTreeMap::new();
    for p in &names {
        let spec = std::fs::read_to_string(p).unwrap();
        let result =
            cclab_sim::run_json(&spec).unwrap_or_else(|e| panic!("{}: {e:?}", p.display()));
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        got.insert(name, result.golden_digest());
    }
    let digests = dir.join("digests.txt");
    if std::env::var_os("CCLAB_GOLDEN_UPDATE").is_some() {
        let text: String = got.iter().map(|(k, v)| format!("{k} {v}\n")).collect();
        std::fs::write(&digests, text).unwrap();
        return;
    }
    let want: BTreeMap<String, String> = std::fs::read_to_string(&digests)
        .expect("tests/golden/digests.txt (record with CCLAB_GOLDEN_UPDATE=1)")
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let moved: Vec<_> = got
        .iter()
        .filter(|(k, v)| want.get(*k) != Some(v))
        .map(|(k, _)| k.as_str())
        .collect();
    assert_eq!(got.len(), want.len(), "spec set differs from digests.txt");
    assert!(moved.is_empty(), "results moved for: {moved:?}");
}
