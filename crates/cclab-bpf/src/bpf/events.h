/* What the BPF program and the controller exchange. Mirrored in src/events.rs (`Event`, `Decision`);
 * both sides assert the sizes, so a field added on one side only fails the build. */
#ifndef CCLAB_EVENTS_H
#define CCLAB_EVENTS_H

/* A power of two: a flow's slot in `decisions` is its id masked, so the verifier sees a bounded index.
 * Ids are never reused (a 32-bit counter); a decision names the id it is for, so a slot that wrapped to
 * a new socket is never applied to the old one. */
#define CCLAB_MAX_FLOWS 4096

/* The ACK-to-applied histogram: 1-µs buckets, the last one for everything from 9.999 ms on. */
#define CCLAB_DELAY_BUCKETS 10000

enum cclab_event_kind {
	/* The congestion control was attached to an established connection (`init`). */
	CCLAB_EV_INIT = 1,
	/* One ACK (`cong_control`), with Linux's rate sample. */
	CCLAB_EV_ACK = 2,
	/* The connection's congestion state changed (`set_state`): `state` is the new one. */
	CCLAB_EV_STATE = 3,
	/* Linux found its last reduction spurious and undid it (`undo_cwnd`). */
	CCLAB_EV_UNDO = 4,
	/* The socket is gone (`release`). */
	CCLAB_EV_RELEASE = 5,
};

/* One record on the ring buffer; 128 bytes. Counters are Linux's own (`tp->delivered` …, packets). */
struct cclab_event {
	__u32 kind;
	__u32 flow;
	__u64 now_ns;           /* bpf_ktime_get_ns: CLOCK_MONOTONIC */
	__u32 epoch;            /* state changes seen on this flow (decisions echo it) */
	__u32 state;            /* TCP_CA_* after this event */
	__u32 cwnd;             /* tp->snd_cwnd */
	__u32 ssthresh;         /* tp->snd_ssthresh */
	__u32 srtt_us;          /* tp->srtt_us >> 3 */
	__u32 min_rtt_us;       /* tcp_min_rtt(tp) */
	__u32 in_flight;        /* tcp_packets_in_flight(tp) */
	__u32 packets_out;      /* sent, not cumulatively acked (FlightSize) */
	__u32 delivered;        /* tp->delivered */
	__u32 lost;             /* tp->lost */
	__u32 mss;              /* tp->mss_cache */
	__u32 backoff;          /* icsk_backoff: consecutive RTOs */
	__u32 ack_flags;        /* the FLAG_* bits of tcp_ack() */
	__u32 acked_sacked;     /* rs->acked_sacked */
	__s32 rtt_us;           /* rs->rtt_us, -1 when the ACK gave no sample */
	__s32 rs_delivered;     /* rs->delivered, -1 when the rate sample is invalid */
	__s64 rs_interval_us;   /* rs->interval_us, -1 when invalid */
	__u32 rs_prior_delivered;
	__u32 rs_losses;        /* rs->losses: marked lost by this ACK */
	__u32 rs_prior_in_flight;
	__u32 rs_app_limited;
	__be32 saddr;           /* INIT only: the connection, network byte order */
	__be32 daddr;
	__u16 sport;            /* host byte order */
	__u16 dport;
	__u32 prior_cwnd;       /* UNDO only: the window before the reduction undone */
	__u32 snd_una;          /* tp->snd_una, tp->snd_nxt: bytes, wrapping (packet numbers for the */
	__u32 snd_nxt;          /* algorithm's on_send and acked_seq, src/flow.rs) */
};

/* The controller's latest word on one flow, in the `decisions` array of the program's .bss, which
 * user space maps: written there without a syscall, read by the program on every ACK. `seq` is a
 * sequence lock (odd while the controller writes). */
struct cclab_decision {
	__u32 seq;
	__u32 flow;
	__u32 epoch;            /* the flow's epoch the controller had seen; older than the kernel's: ignored */
	__u32 cwnd;             /* packets, >= 1 */
	__u32 ssthresh;         /* packets; 0x7fffffff: none */
	__u32 flags;            /* CCLAB_DECISION_* */
	__u64 pacing_rate;      /* bytes per second (sk_pacing_rate) */
	__u64 event_ns;         /* now_ns of the record this decision answers (ACK-to-applied delay) */
};

_Static_assert(sizeof(struct cclab_event) == 128, "mirror in src/events.rs");
_Static_assert(sizeof(struct cclab_decision) == 40, "mirror in src/events.rs");

/* cclab_decision.flags */
#define CCLAB_DECISION_PACE 1  /* the kernel paces at pacing_rate (sk_pacing_status = NEEDED) */
#define CCLAB_DECISION_RENO 2  /* no algorithm for this socket: the program's Reno steers it */
#define CCLAB_DECISION_PRR 4   /* in recovery or CWR, Linux's PRR towards cwnd (window algorithms) */

#endif
