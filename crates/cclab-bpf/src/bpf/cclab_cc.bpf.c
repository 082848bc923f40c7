// SPDX-License-Identifier: GPL-2.0
/* cclab's kernel congestion control: a fixed tcp_congestion_ops that holds no algorithm.
 *
 * Every ACK, state change, undo, start and end of a socket is reported to user space on a ring buffer;
 * the controller (src/controller.rs) runs the chosen cclab algorithm on those events and writes the
 * window, threshold and pacing rate into `decisions`, which this program applies on the next ACK. It
 * is the split CCP (SIGCOMM 2018) made, with BPF struct_ops in place of CCP's kernel module.
 *
 * When the controller falls silent (its heartbeat older than `stale_ns`: killed, stopped, or far
 * behind), the program steers the socket itself with Linux's Reno (kfunc tcp_reno_cong_avoid), so live
 * connections keep going and back off on loss. The licence is GPL because the kernel lets only GPL
 * programs call those kfuncs. */
#include "kernel.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "events.h"

char _license[] SEC("license") = "GPL";

#define barrier() asm volatile("" ::: "memory")
#define READ_ONCE(x) (*(volatile typeof(x) *)&(x))
/* tcp_ack()'s flag bit (net/ipv4/tcp_input.c) PRR reads; the controller gets all of them. */
#define FLAG_SND_UNA_ADVANCED 0x400

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;

/* Set by the controller before load. */
const volatile __u64 stale_ns = 250000000;   /* controller silent this long: Reno takes over */
const volatile __u64 wake_ns = 200000;       /* wake the reader at most this often for ACKs */

/* Written by the controller (mapped memory). */
struct cclab_decision decisions[CCLAB_MAX_FLOWS];
__u64 heartbeat_ns;

/* Counters the controller reads. */
__u32 next_flow;
__u64 dropped;        /* events lost because the ring was full */
__u64 fallback_acks;  /* ACKs handled by the Reno fallback */
__u64 applied;        /* decisions applied */
/* Delay from the record a decision answers to the ACK that first applies it, 1-µs buckets. */
__u64 applied_delay_us[CCLAB_DELAY_BUCKETS];
__u64 last_wake_ns;

/* Sized by the controller before load (Options::ring_bytes); this is the default. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} cclab_events SEC(".maps");

/* Per-socket state, in the socket's icsk_ca_priv (104 bytes; this uses 24). */
struct flow_priv {
	__u32 id;
	__u32 state;
	__u32 epoch;
	__u32 prior_cwnd;
	__u32 prior_ssthresh;
	__u32 pacing;
	__u32 prr_delivered;
	__u32 last_seq;     /* the decision slot's sequence when this socket last applied it */
};

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct flow_priv *priv(const struct sock *sk)
{
	return (struct flow_priv *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static __always_inline __u32 packets_in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

/* Reserves a record and fills what every kind carries; NULL (counted) when the ring is full. */
static __always_inline struct cclab_event *begin(struct sock *sk, __u32 kind, __u64 now)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct flow_priv *p = priv(sk);
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	struct cclab_event *e = bpf_ringbuf_reserve(&cclab_events, sizeof(*e), 0);

	if (!e) {
		__sync_fetch_and_add(&dropped, 1);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->flow = p->id;
	e->now_ns = now;
	e->epoch = p->epoch;
	e->state = p->state;
	e->cwnd = tp->snd_cwnd;
	e->ssthresh = tp->snd_ssthresh;
	e->srtt_us = tp->srtt_us >> 3;
	e->min_rtt_us = tp->rtt_min.s[0].v;
	e->in_flight = packets_in_flight(tp);
	e->packets_out = tp->packets_out;
	e->delivered = tp->delivered;
	e->lost = tp->lost;
	e->snd_una = tp->snd_una;
	e->snd_nxt = tp->snd_nxt;
	e->mss = tp->mss_cache;
	e->backoff = icsk->icsk_backoff;
	e->rtt_us = -1;
	e->rs_delivered = -1;
	e->rs_interval_us = -1;
	return e;
}

/* ACK records wake the reader at most every wake_ns (batches at high rates, bounded delay at low
 * ones); everything else wakes it at once. */
static __always_inline void submit(struct cclab_event *e, __u64 now)
{
	__u64 flags = BPF_RB_FORCE_WAKEUP;

	if (e->kind == CCLAB_EV_ACK) {
		if (now - READ_ONCE(last_wake_ns) < wake_ns)
			flags = BPF_RB_NO_WAKEUP;
		else
			last_wake_ns = now;
	}
	bpf_ringbuf_submit(e, flags);
}

/* Linux's Proportional Rate Reduction (RFC 6937, tcp_cwnd_reduction), which the kernel skips for a
 * congestion control with cong_control: sent / delivered = target / prior window while the flight is
 * above the target, then at most one more than delivered per ACK. Transport behaviour, not an
 * algorithm: the target is the algorithm's window. */
static __always_inline void prr(struct tcp_sock *tp, struct flow_priv *p, __u32 target, __u32 acked,
				int flag, int losses)
{
	__s64 in_flight = packets_in_flight(tp);
	__s64 delta = (__s64)target - in_flight;
	__s64 out = tp->prr_out;
	__s64 sndcnt;

	if (!acked || !p->prior_cwnd)
		return;
	p->prr_delivered += acked;
	if (delta < 0) {
		sndcnt = ((__u64)target * p->prr_delivered + p->prior_cwnd - 1) / p->prior_cwnd - out;
	} else {
		sndcnt = (__s64)p->prr_delivered - out;
		if (sndcnt < acked)
			sndcnt = acked;
		if ((flag & FLAG_SND_UNA_ADVANCED) && !losses)
			sndcnt++;
		if (sndcnt > delta)
			sndcnt = delta;
	}
	/* The fast retransmission leaves on entering recovery whatever the quota says. */
	if (sndcnt < (out ? 0 : 1))
		sndcnt = out ? 0 : 1;
	tp->snd_cwnd = in_flight + sndcnt > 0 ? in_flight + sndcnt : 1;
}

/* A decision's first use on this socket: how long after the record it answers. */
static __always_inline void first_use(struct flow_priv *p, __u32 seq, __u64 event_ns)
{
	__u64 us;

	if (p->last_seq == seq)
		return;
	p->last_seq = seq;
	us = (bpf_ktime_get_ns() - event_ns) / 1000;
	if (us >= CCLAB_DELAY_BUCKETS)
		us = CCLAB_DELAY_BUCKETS - 1;
	__sync_fetch_and_add(&applied_delay_us[us], 1);
}

/* The controller's decision for this flow, if it is for this socket and this epoch. Returns -1 when
 * the controller has no algorithm for the socket (Reno fallback). */
static __always_inline int apply(struct sock *sk, struct tcp_sock *tp, struct flow_priv *p,
				 const struct rate_sample *rs, int flag)
{
	struct cclab_decision *d = &decisions[p->id & (CCLAB_MAX_FLOWS - 1)];
	__u32 seq = READ_ONCE(d->seq);
	__u32 flow, epoch, cwnd, ssthresh, flags;
	__u64 rate, event_ns;

	if (seq & 1)
		return 0;
	barrier();
	flow = READ_ONCE(d->flow);
	epoch = READ_ONCE(d->epoch);
	cwnd = READ_ONCE(d->cwnd);
	ssthresh = READ_ONCE(d->ssthresh);
	flags = READ_ONCE(d->flags);
	rate = READ_ONCE(d->pacing_rate);
	event_ns = READ_ONCE(d->event_ns);
	barrier();
	if (READ_ONCE(d->seq) != seq || flow != p->id)
		return 0;
	if (flags & CCLAB_DECISION_RENO)
		return -1;
	if ((flags & CCLAB_DECISION_PRR) && (p->state == TCP_CA_Recovery || p->state == TCP_CA_CWR)) {
		/* Until the controller has seen this reduction, aim at the threshold the ssthresh hook
		 * set (Reno's halving). */
		prr(tp, p, epoch == p->epoch ? cwnd : tp->snd_ssthresh, rs->acked_sacked, flag,
		    rs->losses);
		if (epoch == p->epoch) {
			tp->snd_ssthresh = ssthresh;
			first_use(p, seq, event_ns);
		}
		__sync_fetch_and_add(&applied, 1);
		return 0;
	}
	if (epoch != p->epoch || !cwnd)
		return 0;
	tp->snd_cwnd = cwnd;
	tp->snd_ssthresh = ssthresh;
	sk->sk_pacing_rate = rate;
	if ((flags & CCLAB_DECISION_PACE) && !p->pacing) {
		p->pacing = 1;
		sk->sk_pacing_status = SK_PACING_NEEDED;
	}
	first_use(p, seq, event_ns);
	__sync_fetch_and_add(&applied, 1);
	return 0;
}

/* The controller is silent: its heartbeat is older than stale_ns. Signed, because the controller may
 * write a heartbeat a little newer than this ACK's clock reading. */
static __always_inline bool controller_silent(__u64 now)
{
	return (__s64)(now - READ_ONCE(heartbeat_ns)) > (__s64)stale_ns;
}

/* Linux's Reno while the controller is silent; the pacing rate as tcp_update_pacing_rate sets it
 * (2x the window's rate in slow start, 1.2x after), which also sizes TSO bursts. */
static __always_inline void fallback(struct sock *sk, struct tcp_sock *tp, struct flow_priv *p,
				     __u32 ack, __u32 acked)
{
	__u64 rate;
	__u32 srtt = tp->srtt_us >> 3;

	__sync_fetch_and_add(&fallback_acks, 1);
	/* In a window reduction the window drops to the threshold the ssthresh hook set (Linux would
	 * spread it with PRR); otherwise, and in the slow start after an RTO, Reno grows it. */
	if (p->state == TCP_CA_CWR || p->state == TCP_CA_Recovery) {
		if (tp->snd_cwnd > tp->snd_ssthresh)
			tp->snd_cwnd = tp->snd_ssthresh > 2 ? tp->snd_ssthresh : 2;
	} else {
		tcp_reno_cong_avoid(sk, ack, acked);
	}
	if (srtt) {
		rate = (__u64)tp->mss_cache * tp->snd_cwnd * 1000000 / srtt;
		rate = tp->snd_cwnd < tp->snd_ssthresh / 2 ? rate * 2 : rate * 6 / 5;
		sk->sk_pacing_rate = rate;
	}
}

SEC("struct_ops")
void BPF_PROG(cclab_init, struct sock *sk)
{
	struct flow_priv *p = priv(sk);
	struct cclab_event *e;
	__u64 now = bpf_ktime_get_ns();

	/* Everything zero (state TCP_CA_Open, epoch 0) but the id. */
	__builtin_memset(p, 0, sizeof(*p));
	p->id = __sync_fetch_and_add(&next_flow, 1) + 1;
	e = begin(sk, CCLAB_EV_INIT, now);
	if (!e)
		return;
	e->saddr = sk->__sk_common.skc_rcv_saddr;
	e->daddr = sk->__sk_common.skc_daddr;
	e->sport = sk->__sk_common.skc_num;
	e->dport = __builtin_bswap16(sk->__sk_common.skc_dport);
	submit(e, now);
}

SEC("struct_ops")
void BPF_PROG(cclab_release, struct sock *sk)
{
	__u64 now = bpf_ktime_get_ns();
	struct cclab_event *e;

	if (!priv(sk)->id)
		return;
	e = begin(sk, CCLAB_EV_RELEASE, now);
	if (e)
		submit(e, now);
}

SEC("struct_ops")
void BPF_PROG(cclab_cong_control, struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct flow_priv *p = priv(sk);
	__u64 now = bpf_ktime_get_ns();
	struct cclab_event *e;

	/* The handshake's ACK reaches cong_control before init: nothing to report or steer yet. */
	if (!p->id)
		return;
	e = begin(sk, CCLAB_EV_ACK, now);
	if (e) {
		e->ack_flags = flag;
		e->acked_sacked = rs->acked_sacked;
		e->rtt_us = rs->rtt_us;
		e->rs_delivered = rs->delivered;
		e->rs_interval_us = rs->interval_us;
		e->rs_prior_delivered = rs->prior_delivered;
		e->rs_losses = rs->losses;
		e->rs_prior_in_flight = rs->prior_in_flight;
		e->rs_app_limited = rs->is_app_limited;
		submit(e, now);
	}
	if (controller_silent(now) || apply(sk, tp, p, rs, flag) < 0)
		fallback(sk, tp, p, ack, rs->acked_sacked);
}

/* Called as Linux enters recovery, CWR or loss, before set_state. The controller's threshold replaces
 * this on the next decision; Reno's halving is what the fallback needs. The window before is kept for
 * undo. */
SEC("struct_ops")
__u32 BPF_PROG(cclab_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct flow_priv *p = priv(sk);
	__u32 half = tp->snd_cwnd >> 1;

	p->prior_cwnd = tp->snd_cwnd;
	p->prior_ssthresh = tp->snd_ssthresh;
	p->prr_delivered = 0;
	return half > 2 ? half : 2;
}

SEC("struct_ops")
void BPF_PROG(cclab_set_state, struct sock *sk, __u8 new_state)
{
	struct flow_priv *p = priv(sk);
	__u64 now = bpf_ktime_get_ns();
	struct cclab_event *e;

	p->state = new_state;
	if (!p->id)
		return;
	p->epoch++;
	e = begin(sk, CCLAB_EV_STATE, now);
	if (e)
		submit(e, now);
}

/* Linux's undo keeps at least the window from before the reduction (tcp_reno_undo_cwnd); the
 * controller hears of it and lets the algorithm undo its own state. */
SEC("struct_ops")
__u32 BPF_PROG(cclab_undo_cwnd, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct flow_priv *p = priv(sk);
	__u32 cwnd = tp->snd_cwnd > p->prior_cwnd ? tp->snd_cwnd : p->prior_cwnd;
	__u64 now = bpf_ktime_get_ns();
	struct cclab_event *e;

	p->epoch++;
	if (!p->id)
		return cwnd;
	e = begin(sk, CCLAB_EV_UNDO, now);
	if (e) {
		e->prior_cwnd = p->prior_cwnd;
		e->ssthresh = p->prior_ssthresh;
		submit(e, now);
	}
	return cwnd;
}

/* The name is set by the controller before load (`cclab_<algorithm>` by default). */
SEC(".struct_ops.link")
struct tcp_congestion_ops cclab_ops = {
	.init = (void *)cclab_init,
	.release = (void *)cclab_release,
	.cong_control = (void *)cclab_cong_control,
	.ssthresh = (void *)cclab_ssthresh,
	.set_state = (void *)cclab_set_state,
	.undo_cwnd = (void *)cclab_undo_cwnd,
	.name = "cclab",
};
