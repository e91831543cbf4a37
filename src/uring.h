/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A ring per calling thread, for the backends that drive io_uring (nvme,
 * zbd): created on first use, found through a pthread key owned by the open
 * device, freed when its thread exits or when the device closes, whichever
 * comes first, exactly once. Worker threads never share a submission
 * queue, so no call takes a lock on the I/O path; creating and freeing a
 * ring takes one process-wide lock that is never destroyed.
 */
#ifndef P2Z_URING_H
#define P2Z_URING_H

#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct p2z_rings;

/**
 * struct p2z_ring - one calling thread's ring
 * @ring: the io_uring
 * @buf: per-ring buffer of rs->buf_bytes, 4096-aligned, or NULL
 * @rs: the registry it belongs to
 * @owner: the thread it belongs to
 * @prev: list of all rings of all registries, guarded by the lock in
 *	  uring.c
 * @next: see @prev
 */
struct p2z_ring {
	struct io_uring ring;
	void *buf;
	struct p2z_rings *rs;
	pthread_t owner;
	struct p2z_ring *prev;
	struct p2z_ring *next;
};

/**
 * struct p2z_rings - the rings of one open device
 * @key: finds the calling thread's ring
 * @nr: rings created and not yet freed, guarded by the lock in uring.c
 * @entries: ring size
 * @flags: IORING_SETUP_* flags
 * @buf_bytes: size of each ring's buffer, 0 for none
 * @name: the device, for messages; must outlive the registry
 * @setup_err_told: a failed ring setup was logged (atomic)
 */
struct p2z_rings {
	pthread_key_t key;
	unsigned int nr;
	unsigned int entries;
	unsigned int flags;
	size_t buf_bytes;
	const char *name;
	bool setup_err_told;
};

/**
 * p2z_rings_init() - set up an empty registry
 * @rs: registry
 * @entries: ring size
 * @flags: IORING_SETUP_* flags for every ring
 * @buf_bytes: per-ring buffer size (0: none)
 * @name: device name for messages
 *
 * Return: 0 or -errno.
 */
int p2z_rings_init(struct p2z_rings *rs, unsigned int entries,
		   unsigned int flags, size_t buf_bytes, const char *name);

/**
 * p2z_rings_destroy() - free every ring; no call may be in flight
 * @rs: registry set up by p2z_rings_init()
 *
 * Threads may be exiting meanwhile: each ring is freed once, by its
 * thread's key destructor or here, and nothing of @rs is used after this
 * returns, so @rs may then be freed.
 */
void p2z_rings_destroy(struct p2z_rings *rs);

/**
 * p2z_rings_nr() - number of rings of a registry not yet freed
 * @rs: registry
 *
 * Return: that number.
 */
unsigned int p2z_rings_nr(struct p2z_rings *rs);

/**
 * p2z_ring_get() - the calling thread's ring, created on first use
 * @rs: registry
 * @rp: gets the ring
 *
 * A ring that cannot be set up is a resource of this host missing (EMFILE,
 * ENFILE, ENOMEM; EPERM or ENOSYS where io_uring is disabled), never a
 * device error: the backends return the errno as it is, and the zone
 * layer's p2z_zone_err_is_io() keeps it out of the errors= policy.
 *
 * Return: 0 or -errno (the first setup failure of @rs is logged).
 */
int p2z_ring_get(struct p2z_rings *rs, struct p2z_ring **rp);

/**
 * p2z_ring_discard() - drop the calling thread's ring after an io_uring
 * failure that left it in an unknown state; the next call makes a new one
 * @r: the calling thread's ring, with no command in flight: every command
 *     submitted must have been reaped (p2z_ring_reap()); SQEs never
 *     submitted are dropped with the ring, never run
 */
void p2z_ring_discard(struct p2z_ring *r);

/**
 * p2z_ring_submit() - io_uring_submit(), again on EINTR
 * @r: ring
 *
 * Return: number of SQEs submitted or -errno.
 */
int p2z_ring_submit(struct p2z_ring *r);

/**
 * p2z_ring_reap() - wait for the completion of a command in flight
 * @r: ring with at least one submitted command not yet reaped
 * @cqe: gets the completion; the caller marks it seen
 *
 * Never gives up: until its completion arrives, the kernel may still read
 * or write the command's buffer, which the caller must not reuse before.
 * If io_uring_enter() fails (it should not: the completion queue has room
 * for every command in flight), says so once and polls the completion
 * queue, which the kernel fills whatever the system call returns. Devices
 * complete or abort every command (NVMe: the controller's timeout and
 * reset), so this returns.
 */
void p2z_ring_reap(struct p2z_ring *r, struct io_uring_cqe **cqe);

/*
 * For the rings of asynchronous queues (one per struct p2z_dev_queue, not
 * in a registry): each SQE's user_data is its struct p2z_io, 0 for none,
 * with the queue's tag bits ORed in on a shared ring.
 */

/**
 * struct p2z_qring - a queue's ring: its own, or one it shares
 * @ring: the io_uring
 * @tag: user_data bits of this queue's SQEs on a shared ring, 0 on its own
 * @shared: @ring belongs to the caller of p2z_ring_queue_share(): its owner
 *	    submits the SQEs left on it and feeds this queue the completions
 *	    tagged @tag (p2z_ring_queue_complete()); never waited on here
 * @plugged: SQEs stay on @ring until p2z_ring_queue_unplug() or a reap
 *	     that waits (p2z_ring_queue_plug())
 */
struct p2z_qring {
	struct io_uring *ring;
	uint64_t tag;
	bool shared;
	bool plugged;
};

/**
 * p2z_ring_queue_open() - a queue's own ring, its completions signalling
 *			   an eventfd
 * @depth: entries
 * @setup_flags: IORING_SETUP_* (SQE128 | CQE32 for NVMe passthrough)
 * @efd: the eventfd to register with the ring
 * @qrp: result, for p2z_ring_queue_close()
 *
 * Return: 0 or -errno.
 */
int p2z_ring_queue_open(unsigned int depth, unsigned int setup_flags, int efd,
			struct p2z_qring **qrp);

/**
 * p2z_ring_queue_share() - a queue on a ring its caller owns
 * @ring: the ring, set up with at least @setup_flags
 * @setup_flags: IORING_SETUP_* flags the backend's commands need
 * @tag: user_data bits marking this queue's completions: nonzero, above
 *	 every pointer (bit 62, say)
 * @qrp: result, for p2z_ring_queue_close() (which leaves @ring alone)
 *
 * Return: 0, -EINVAL (@ring lacks a flag, or no @tag), or -ENOMEM.
 */
int p2z_ring_queue_share(struct io_uring *ring, unsigned int setup_flags,
			 uint64_t tag, struct p2z_qring **qrp);

/**
 * p2z_ring_queue_plug() - hold a queue's SQEs back, to send many with one
 *			   system call
 * @qr: the queue's ring; nothing for a shared one (its owner submits)
 *
 * p2z_ring_queue_submit() then leaves each SQE on the ring; a reap that
 * waits sends them with its wait, p2z_ring_queue_unplug() sends them.
 */
void p2z_ring_queue_plug(struct p2z_qring *qr);

/**
 * p2z_ring_queue_unplug() - send the SQEs held back, submit at once again
 * @qr: the queue's ring
 *
 * Return: 0, or -errno of io_uring_enter(): the SQEs stay on the ring, and
 * the next reap that waits sends them.
 */
int p2z_ring_queue_unplug(struct p2z_qring *qr);

/**
 * p2z_ring_queue_quiet() - stop or restart the ring's eventfd signals
 * @qr: the queue's ring; nothing for a shared one (it has no eventfd)
 * @quiet: true: completions no longer signal the eventfd
 *	   (IORING_CQ_EVENTFD_DISABLED); false: they do again
 *
 * The flag is read by the kernel without a barrier against the caller's
 * look at the completion queue: restarting the signals while commands are
 * in flight may miss one, so the caller restarts them with nothing in
 * flight, or signals the eventfd itself.
 */
void p2z_ring_queue_quiet(struct p2z_qring *qr, bool quiet);

/**
 * p2z_ring_queue_self() - the ring of a backend queue that is a bare
 *			   struct p2z_qring (its @queue_qring op)
 * @bq: the backend's queue state
 *
 * Return: @bq.
 */
struct p2z_qring *p2z_ring_queue_self(void *bq);

struct p2z_io;

/**
 * p2z_ring_queue_reap() - complete what a queue's ring has completed
 * @qr: the queue's ring; a shared one completes nothing here (0)
 * @wait: wait for one completion if none is there, sending the SQEs held
 *	  back (p2z_ring_queue_plug()) with the wait
 * @name: device, for the message if a wait fails
 * @done: the backend's part: fill @io's result from @cqe (called before the
 *	  CQE is released)
 * @arg: passed to @done
 *
 * Then runs each request's end_io(); CQEs without a request are dropped.
 *
 * Return: requests completed.
 */
int p2z_ring_queue_reap(struct p2z_qring *qr, bool wait, const char *name,
			void (*done)(void *arg, struct p2z_io *io,
				     const struct io_uring_cqe *cqe),
			void *arg);

/**
 * p2z_ring_queue_complete() - complete one completion of a shared ring
 * @qr: the queue's ring, shared
 * @cqe: a completion carrying @qr->tag; the caller marks it seen
 * @done: as for p2z_ring_queue_reap()
 * @arg: passed to @done
 *
 * Return: 1 (its request completed, end_io run) or 0 (no request).
 */
int p2z_ring_queue_complete(struct p2z_qring *qr,
			    const struct io_uring_cqe *cqe,
			    void (*done)(void *arg, struct p2z_io *io,
					 const struct io_uring_cqe *cqe),
			    void *arg);

/**
 * p2z_ring_queue_hold_fd() - the ring holds @fd's open file until it is
 *			      freed (after its last command completed)
 * @qr: a queue's ring, its own or shared (then the shared ring holds it)
 * @fd: the file (registered as the ring's only fixed file)
 *
 * Return: 0 or -errno.
 */
int p2z_ring_queue_hold_fd(struct p2z_qring *qr, int fd);

/**
 * p2z_ring_queue_close() - undo p2z_ring_queue_open() or _share() (a
 *			    shared ring stays its owner's)
 * @qr: the ring
 */
void p2z_ring_queue_close(struct p2z_qring *qr);

/**
 * p2z_ring_queue_sqe() - an SQE of a queue's ring
 * @qr: the queue's ring
 *
 * Return: the SQE, or NULL if the submission queue is full.
 */
static inline struct io_uring_sqe *p2z_ring_queue_sqe(struct p2z_qring *qr)
{
	return io_uring_get_sqe(qr->ring);
}

/**
 * p2z_ring_queue_submit() - submit the SQE just prepared on a queue's ring
 * @qr: the queue's ring
 * @sqe: that SQE, its user_data set
 *
 * On a shared ring the SQE gets @qr->tag and stays for the owner's next
 * submission; on its own ring, as p2z_ring_submit_one().
 *
 * Return: 0 or -errno.
 */
int p2z_ring_queue_submit(struct p2z_qring *qr, struct io_uring_sqe *sqe);

/**
 * p2z_ring_submit_one() - submit the SQE just prepared
 * @ring: ring
 * @sqe: that SQE
 *
 * If it cannot be submitted, it is turned into a no-op with no user_data,
 * so that whenever the kernel takes it later it touches no buffer and
 * completes nothing.
 *
 * Return: 0 or -errno.
 */
int p2z_ring_submit_one(struct io_uring *ring, struct io_uring_sqe *sqe);

/**
 * p2z_ring_wait() - wait until a completion is in the completion queue,
 *		     and leave it there
 * @ring: ring with a command in flight, or one left on it
 * @name: device, for the message if the wait fails
 *
 * Sends the SQEs left on @ring (p2z_ring_queue_plug()) with the wait, in
 * one io_uring_enter(). Never gives up, as p2z_ring_reap().
 */
void p2z_ring_wait(struct io_uring *ring, const char *name);

#endif
