//! `cclab-net cleanup`: removes what a crashed *named* setup could leave behind — network namespaces
//! bind-mounted as /run/netns/cclab-* and network devices named cclab* in the calling namespace.
//!
//! A `cclab-net run` itself never needs this: its namespaces are anonymous and die with the process
//! (see [`crate::hosts`]). This is for leftovers of manual experiments (`ip netns add cclab-…`) and of
//! other tools using the prefix, so that a test host can be brought back to a clean state.

use std::ffi::CString;
use std::io;

pub const PREFIX: &str = "cclab";

/// Removes stale cclab namespaces and devices; returns what was removed.
pub fn cleanup() -> io::Result<Vec<String>> {
    let mut removed = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/run/netns") {
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with(&format!("{PREFIX}-")) {
                continue;
            }
            let path = e.path();
            let c = CString::new(path.as_os_str().as_encoded_bytes()).map_err(io::Error::other)?;
            // SAFETY: c is a valid path; MNT_DETACH unmounts lazily (the namespace goes when unused).
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
            std::fs::remove_file(&path)?;
            removed.push(format!("netns {name}"));
        }
    }
    if let Ok(dir) = std::fs::read_dir("/sys/class/net") {
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with(PREFIX) {
                continue;
            }
            // `ip` is the portable way to delete any link type (a persistent TUN, a veth, …).
            let st = std::process::Command::new("ip")
                .args(["link", "delete", &name])
                .status()?;
            if st.success() {
                removed.push(format!("device {name}"));
            } else {
                return Err(io::Error::other(format!(
                    "ip link delete {name} failed: {st}"
                )));
            }
        }
    }
    Ok(removed)
}
