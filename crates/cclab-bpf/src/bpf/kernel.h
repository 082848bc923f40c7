/* The few kernel types the program touches, declared by hand rather than from a generated vmlinux.h.
 *
 * Why: a full vmlinux.h is megabytes generated from one kernel's BTF by bpftool (which Debian 12 ships
 * too old for struct_ops). Every struct here is marked preserve_access_index, so libbpf relocates each
 * field access against the running kernel's BTF by name (CO-RE): only the names and kinds must match,
 * not the layout, and a field the kernel lacks fails at load time with its name. Members the program
 * does not use are left out; libbpf matches struct_ops members by name too. Field names follow
 * include/linux/tcp.h, include/net/sock.h, include/net/inet_connection_sock.h, include/net/tcp.h. */
#ifndef CCLAB_KERNEL_H
#define CCLAB_KERNEL_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed int __s32;
typedef signed long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
#define true 1
#define false 0

enum bpf_map_type {
	BPF_MAP_TYPE_RINGBUF = 27,
};

enum {
	BPF_RB_NO_WAKEUP = 1,
	BPF_RB_FORCE_WAKEUP = 2,
};

/* include/net/inet_connection_sock.h: enum tcp_ca_state */
enum {
	TCP_CA_Open = 0,
	TCP_CA_Disorder = 1,
	TCP_CA_CWR = 2,
	TCP_CA_Recovery = 3,
	TCP_CA_Loss = 4,
};

/* include/net/sock.h: enum sk_pacing */
enum {
	SK_PACING_NONE = 0,
	SK_PACING_NEEDED = 1,
};

struct sock_common {
	__be32 skc_daddr;
	__be32 skc_rcv_saddr;
	__be16 skc_dport;
	__u16 skc_num;
} __attribute__((preserve_access_index));

struct sock {
	struct sock_common __sk_common;
	unsigned long sk_pacing_rate;
	__u32 sk_pacing_status;
} __attribute__((preserve_access_index));

struct inet_connection_sock {
	__u8 icsk_backoff;
	__u64 icsk_ca_priv[13];
} __attribute__((preserve_access_index));

struct minmax_sample {
	__u32 t;
	__u32 v;
} __attribute__((preserve_access_index));

struct minmax {
	struct minmax_sample s[3];
} __attribute__((preserve_access_index));

struct tcp_sock {
	__u32 snd_cwnd;
	__u32 snd_ssthresh;
	__u32 srtt_us;
	__u32 mss_cache;
	__u32 packets_out;
	__u32 sacked_out;
	__u32 lost_out;
	__u32 retrans_out;
	__u32 delivered;
	__u32 lost;
	__u32 prr_out;
	__u32 snd_una;
	__u32 snd_nxt;
	struct minmax rtt_min;
} __attribute__((preserve_access_index));

struct rate_sample {
	__u32 prior_delivered;
	__s32 delivered;
	long interval_us;
	long rtt_us;
	int losses;
	__u32 acked_sacked;
	__u32 prior_in_flight;
	bool is_app_limited;
} __attribute__((preserve_access_index));

/* Only the members the program sets; the kernel's struct has more (libbpf matches by name). */
struct tcp_congestion_ops {
	__u32 (*ssthresh)(struct sock *sk);
	void (*set_state)(struct sock *sk, __u8 new_state);
	void (*cong_control)(struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs);
	__u32 (*undo_cwnd)(struct sock *sk);
	char name[16];
	void (*init)(struct sock *sk);
	void (*release)(struct sock *sk);
} __attribute__((preserve_access_index));

#endif
