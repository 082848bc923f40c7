//! placeholder module root; see docs/architecture.md
