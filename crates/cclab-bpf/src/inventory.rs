//! What of the kernel datapath is alive on this machine: BPF maps of our program and registered
//! `cclab*` congestion controls. The fault tests use it to show that nothing is left behind after a
//! controller is killed and its sockets are closed (`cclab-bpf leftovers`).

use libbpf_rs::libbpf_sys;

/// Names of our program's maps as the kernel reports them (at most 15 bytes): the ring buffer, the
/// struct_ops map, and libbpf's `<object>.bss` / `<object>.rodata` (object "cclab_cc").
fn ours(name: &str) -> bool {
    name == "cclab_events" || name == "cclab_ops" || name.starts_with("cclab_cc.")
}

/// Live BPF maps that belong to a cclab kernel-datapath program, as (id, name). Needs root.
pub fn live_maps() -> std::io::Result<Vec<(u32, String)>> {
    let mut out = Vec::new();
    let mut id = 0u32;
    loop {
        let mut next = 0u32;
        // SAFETY: valid out pointer.
        if unsafe { libbpf_sys::bpf_map_get_next_id(id, &mut next) } != 0 {
            let e = std::io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::ENOENT) => Ok(out),
                _ => Err(e),
            };
        }
        id = next;
        // SAFETY: plain syscall wrapper; a map freed meanwhile gives an error, skipped.
        let fd = unsafe { libbpf_sys::bpf_map_get_fd_by_id(id) };
        if fd < 0 {
            continue;
        }
        let mut info = libbpf_sys::bpf_map_info::default();
        let mut len = std::mem::size_of::<libbpf_sys::bpf_map_info>() as u32;
        // SAFETY: info and len describe a valid buffer; fd is ours and closed right after.
        let r = unsafe { libbpf_sys::bpf_map_get_info_by_fd(fd, &mut info, &mut len) };
        unsafe { libc::close(fd) };
        if r != 0 {
            continue;
        }
        let name: Vec<u8> = info
            .name
            .iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8)
            .collect();
        let name = String::from_utf8_lossy(&name).into_owned();
        if ours(&name) {
            out.push((id, name));
        }
    }
}

/// Registered TCP congestion controls whose name starts with `cclab`.
pub fn registered() -> std::io::Result<Vec<String>> {
    let s = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")?;
    Ok(s.split_whitespace()
        .filter(|n| n.starts_with("cclab"))
        .map(str::to_string)
        .collect())
}
