/* SPDX-License-Identifier: MIT */
/* The auditlog file writer: see auditw.h and docs/AUDITLOG.md. */
#include "auditw.h"
#include "auditfmt.h"
#include "jitsframe.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* Room kept under RLIMIT_FSIZE for the final note: we never write past
 * the limit, so the host never gets SIGXFSZ from us. */
#define NOTE_ROOM 512

/* A regular file is written through a shared mapping of a window of it
 * (MAP_WINDOW bytes, fallocated ahead): a record is a memcpy, in the page
 * cache as soon as it is copied (a SIGKILL does not lose it). Anything
 * else (a device, a pipe) or a file system without fallocate gets
 * write(2). */
#define MAP_WINDOW (1u << 20)

struct alogw {
	int fd;
	int reg;       /* a regular file: positional writes, mapping */
	int nomap;     /* no mapping (not possible or given up): pwritev */
	int nomap_opt; /* asked for: never map */
	uint8_t *map;  /* window [mbase, mbase + mlen) of the file */
	uint64_t mbase;
	size_t mlen;
	uint64_t fsize; /* the file's size: off, or the fallocated end */
	uint64_t pop;	/* pages faulted in up to here */
	char *path;
	uint64_t max_bytes, limit; /* limit: RLIMIT_FSIZE (or ~0) */
	unsigned keep, gen;
	uint64_t off; /* current file's size (all whole records) */
	uint64_t total, nrec;
	void *header;
	size_t hlen;
	uint8_t *pend; /* framed records waiting for the next write */
	size_t plen, pcap;
	uint64_t pnrec;
	char err[256];
};

size_t alog_note_payload(char *buf, size_t cap, const char *text)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	size_t tl = strlen(text);
	msgpack_pack_map(&pk, 3);
	msgpack_pack_str_with_body(&pk, "ev", 2);
	msgpack_pack_str_with_body(&pk, "note", 4);
	msgpack_pack_str_with_body(&pk, "ns", 2);
	msgpack_pack_uint64(&pk, jsf_now_ns());
	msgpack_pack_str_with_body(&pk, "text", 4);
	msgpack_pack_str_with_body(&pk, text, tl);
	size_t n = sb.size <= cap ? sb.size : 0;
	if (n)
		memcpy(buf, sb.data, n);
	msgpack_sbuffer_destroy(&sb);
	return n;
}

/* ------------------------------------------------- the shared mapping */

/* A SIGBUS while copying into the mapping (the file was truncated under
 * us, by `logrotate copytruncate` for instance, or an I/O error) must not
 * kill the host: a handler, installed with the first mapping, jumps back
 * out of the copy when the fault is ours and leaves every other SIGBUS to
 * the handler that was there before (or the default action). */
static __thread sigjmp_buf *volatile t_bus_jb;
static struct sigaction g_old_bus;
static int g_bus_installed;

static void on_bus(int sig, siginfo_t *si, void *uc)
{
	sigjmp_buf *jb = t_bus_jb;
	if (jb) {
		t_bus_jb = NULL;
		siglongjmp(*jb, 1);
	}
	if (g_old_bus.sa_flags & SA_SIGINFO) {
		g_old_bus.sa_sigaction(sig, si, uc);
	} else if (g_old_bus.sa_handler != SIG_IGN &&
		   g_old_bus.sa_handler != SIG_DFL) {
		g_old_bus.sa_handler(sig);
	} else {
		/* the default action: the faulting access runs again */
		sigaction(SIGBUS, &g_old_bus, NULL);
	}
}

static void install_bus(void)
{
	if (g_bus_installed)
		return;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_bus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &g_old_bus) == 0)
		g_bus_installed = 1;
}

/* memcpy into the mapping; -EIO if that faulted */
static int copy_in(void *dst, const void *src, size_t n)
{
	sigjmp_buf jb;
	if (sigsetjmp(jb, 0))
		return -EIO;
	t_bus_jb = &jb;
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* the copy stays inside */
	memcpy(dst, src, n);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t_bus_jb = NULL;
	return 0;
}

/* one 8-byte store into the mapping (a signal comes before or after it);
 * -EIO if that faulted */
static int store8(uint8_t *dst, uint64_t v)
{
	sigjmp_buf jb;
	if (sigsetjmp(jb, 0))
		return -EIO;
	t_bus_jb = &jb;
	/* after everything before it; one (unaligned) mov on x86-64 */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy(dst, &v, sizeof(v));
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t_bus_jb = NULL;
	return 0;
}

static void unmap(struct alogw *w)
{
	if (w->map)
		munmap(w->map, w->mlen);
	w->map = NULL;
	w->mlen = 0;
}

/* Map a window holding [off, off + want), allocating the file to its end.
 * 0; 1 when mapping is not possible here (use write(2)); -errno. */
static int remap(struct alogw *w, size_t want)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t base = w->off & ~(uint64_t)(pg - 1);
	uint64_t end = base + ((w->off - base + want + MAP_WINDOW - 1) /
			       MAP_WINDOW * MAP_WINDOW);
	if (w->limit != UINT64_MAX) { /* never allocate into the note's room */
		uint64_t cap = w->limit - NOTE_ROOM;
		if (end > cap)
			end = cap;
		if (end < w->off + want)
			return -EFBIG;
	}
	unmap(w);
	if (end > w->fsize) {
		if (fallocate(w->fd, 0, (off_t)w->fsize,
			      (off_t)(end - w->fsize))) {
			int e = errno;
			if (e == EOPNOTSUPP || e == ENOSYS || e == EINVAL)
				return 1;
			return -e;
		}
		w->fsize = end;
	}
	void *m = mmap(NULL, (size_t)(end - base), PROT_READ | PROT_WRITE,
		       MAP_SHARED, w->fd, (off_t)base);
	if (m == MAP_FAILED)
		return 1;
	install_bus();
	w->map = m;
	w->mbase = base;
	w->mlen = (size_t)(end - base);
	w->pop = base;
	return 0;
}

/* Fault the pages of [off, off + want) in ahead, POP_STEP at a time:
 * one madvise for 16 pages costs a quarter of 16 write faults on a shared
 * file mapping (ext4 here), while a whole window at once (~1 ms per MiB)
 * would be a stall. The step's unwritten bytes are first written as zeros
 * with pwrite(2): the page cache's folios are then made by the write path
 * (with their blocks reserved) instead of the fault's, which reads each
 * fresh page of the fallocated (unwritten) range in through readahead and
 * then makes it writable one page at a time; in the VM (flushstorm, perf
 * samples of the whole run) the two calls take 2.3-2.4% instead of the
 * madvise's 3.7-3.9%. The zeros only ever cover bytes at or after off,
 * which hold no record yet (one fstat(2) first: a file cut short by
 * someone else is not extended again). A kernel without MADV_POPULATE_WRITE
 * (before 5.14) says EINVAL: the pages then fault in as they are written. */
#define POP_STEP (64u << 10)
static void populate(struct alogw *w, size_t want)
{
#ifdef MADV_POPULATE_WRITE
	static uint8_t zeros[POP_STEP]; /* .bss: never written */
	uint64_t need = w->off + want, end = w->mbase + w->mlen;
	if (need <= w->pop)
		return;
	uint64_t to = (need + POP_STEP - 1) / POP_STEP * POP_STEP;
	if (to > end)
		to = end;
	/* within the fallocated file (end <= fsize), unless someone cut it
	 * short (then the copy's SIGBUS says so, as without the zeros); an
	 * error leaves the fault's way, as before */
	struct stat st;
	uint64_t z = w->pop > w->off ? w->pop : w->off;
	if (z < to && fstat(w->fd, &st) == 0 && (uint64_t)st.st_size >= to)
		while (z < to) {
			size_t k = to - z < sizeof(zeros) ? (size_t)(to - z)
							  : sizeof(zeros);
			if (pwrite(w->fd, zeros, k, (off_t)z) != (ssize_t)k)
				break;
			z += k;
		}
	if (madvise(w->map + (w->pop - w->mbase), (size_t)(to - w->pop),
		    MADV_POPULATE_WRITE) == 0)
		w->pop = to;
	else
		w->pop = end; /* not supported (or failed): fault on write */
#else
	(void)w;
	(void)want;
#endif
}

/* Copy the iovecs to the file at off through the mapping. The first
 * record's frame (length and checksum) goes in last, in one 8-byte store:
 * a reader, or a SIGKILL, never leaves a record whose bytes are not all
 * there, only the zeros of unwritten space where its frame would be
 * (docs/AUDITLOG.md). 0; 1: not mapped (use write(2)); -errno. */
static int map_put(struct alogw *w, const struct iovec *iov, int n, size_t want)
{
	if (want < ALOG_FRAME)
		return -EINVAL;
	if (!w->map || w->off < w->mbase ||
	    w->off + want > w->mbase + w->mlen) {
		int r = remap(w, want);
		if (r)
			return r;
	}
	populate(w, want);
	uint8_t *dst = w->map + (w->off - w->mbase);
	uint8_t head[ALOG_FRAME];
	size_t at = 0;
	for (int i = 0; i < n; i++) {
		const uint8_t *src = iov[i].iov_base;
		size_t len = iov[i].iov_len;
		if (at < sizeof(head) && len) { /* the first frame: last */
			size_t k =
			    sizeof(head) - at < len ? sizeof(head) - at : len;
			memcpy(head + at, src, k);
			at += k;
			src += k;
			len -= k;
		}
		if (len && copy_in(dst + at, src, len))
			return -EIO;
		at += len;
	}
	uint64_t frame;
	memcpy(&frame, head, sizeof(frame));
	return store8(dst, frame);
}

/* ------------------------------------------------------------ writing */

/* The pending records, then one record (len 0: none), in one go (one
 * copy into the mapping, or one writev; a short write continues); 0 or
 * -errno. */
static int put(struct alogw *w, const void *payload, size_t len)
{
	uint8_t fr[ALOG_FRAME];
	if (len)
		alog_frame(fr, payload, (uint32_t)len);
	struct iovec iov[3] = {{w->pend, w->plen},
			       {fr, len ? sizeof(fr) : 0},
			       {(void *)payload, len}};
	size_t want = w->plen + (len ? sizeof(fr) : 0) + len, done = 0;
	uint64_t nrec = w->pnrec + (len != 0);
	w->plen = 0; /* written or lost: never twice */
	w->pnrec = 0;
	if (w->reg && !w->nomap) {
		int r = map_put(w, iov, 3, want);
		if (r < 0)
			return r;
		if (r == 0)
			done = want;
		else
			w->nomap = 1;
	}
	while (done < want) {
		ssize_t n = w->reg
				? pwritev(w->fd, iov, 3, (off_t)(w->off + done))
				: writev(w->fd, iov, 3);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENOSPC;
		done += (size_t)n;
		size_t k = (size_t)n;
		for (int i = 0; i < 3; i++) {
			size_t t = k < iov[i].iov_len ? k : iov[i].iov_len;
			iov[i].iov_base = (char *)iov[i].iov_base + t;
			iov[i].iov_len -= t;
			k -= t;
		}
	}
	w->off += want;
	w->total += want;
	w->nrec += nrec;
	if (w->fsize < w->off)
		w->fsize = w->off;
	return 0;
}

static int put_raw(struct alogw *w, const void *p, size_t len)
{
	while (len) {
		ssize_t n = w->reg ? pwrite(w->fd, p, len, (off_t)w->off)
				   : write(w->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -ENOSPC;
		p = (const char *)p + n;
		len -= (size_t)n;
		w->off += (size_t)n;
		w->total += (size_t)n;
	}
	if (w->fsize < w->off)
		w->fsize = w->off;
	return 0;
}

/* Back to write(2) with the file cut to its last whole record (the
 * unwritten tail of the window goes). */
static void unmap_cut(struct alogw *w)
{
	unmap(w);
	if (w->reg && w->fsize > w->off && ftruncate(w->fd, (off_t)w->off) == 0)
		w->fsize = w->off;
}

static int create_file(struct alogw *w, int replace)
{
	/* read-write: a shared writable mapping needs it */
	int fl = O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC;
	fl |= replace ? O_TRUNC : O_EXCL;
	w->fd = open(w->path, fl, 0600);
	if (w->fd < 0)
		return -errno;
	/* a character device (/dev/full...) cannot be truncated: fine */
	struct stat st;
	w->reg = fstat(w->fd, &st) == 0 && S_ISREG(st.st_mode);
	w->nomap = w->nomap_opt;
	w->off = w->fsize = 0;
	w->map = NULL;
	w->mlen = 0;
	uint8_t m[ALOG_MAGIC_LEN];
	alog_magic(m);
	if (w->limit < ALOG_MAGIC_LEN + ALOG_FRAME + w->hlen + NOTE_ROOM)
		return -EFBIG;
	int err = put_raw(w, m, sizeof(m));
	if (!err)
		err = put(w, w->header, w->hlen);
	return err;
}

/* Stop for good: cut back to the last whole record, add the note if it
 * fits, close. */
static void stop(struct alogw *w, int err, const char *what)
{
	if (w->fd < 0)
		return;
	snprintf(w->err, sizeof(w->err), "%s: %s", what, strerror(-err));
	w->plen = 0; /* the records waiting are lost with the failed one */
	w->pnrec = 0;
	unmap(w);
	w->nomap = 1;
	struct stat st;
	if (err == -EIO && w->reg &&
	    (fstat(w->fd, &st) < 0 || (uint64_t)st.st_size < w->off)) {
		/* cut short under us: leave the file alone */
		snprintf(w->err, sizeof(w->err),
			 "%s: the file was cut short by someone else", what);
	} else if (ftruncate(w->fd, (off_t)w->off) == 0 || errno == EINVAL) {
		w->fsize = w->off;
		char note[512], buf[640];
		snprintf(note, sizeof(note),
			 "log stopped: %s; the program went on without it",
			 w->err);
		size_t n = alog_note_payload(buf, sizeof(buf), note);
		if (n && w->off + ALOG_FRAME + n <= w->limit &&
		    put(w, buf, n) != 0 && ftruncate(w->fd, (off_t)w->off)) {
			/* nothing more we can do */
		}
	}
	close(w->fd);
	w->fd = -1;
}

int alogw_open(struct alogw **out, const struct alogw_opts *o,
	       const void *header, size_t len)
{
	*out = NULL;
	if (!o->path || !*o->path || len == 0 || len > ALOG_MAX_RECORD)
		return -EINVAL;
	struct alogw *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = -1;
	w->path = strdup(o->path);
	w->header = malloc(len);
	if (!w->path || !w->header) {
		alogw_forget(w);
		return -ENOMEM;
	}
	memcpy(w->header, header, len);
	w->hlen = len;
	w->max_bytes = o->max_bytes;
	w->keep = o->keep;
	w->nomap_opt = o->nomap;
	struct rlimit rl;
	w->limit = UINT64_MAX;
	if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		w->limit = (uint64_t)rl.rlim_cur;
	int err = create_file(w, o->replace);
	struct stat st;
	if (!err && (fstat(w->fd, &st) < 0 || !S_ISREG(st.st_mode)))
		w->max_bytes = 0; /* a device or a pipe: never renamed */
	if (err) {
		/* never unlink: with replace it may be a file (or a device:
		 * /dev/full) that was there before us */
		alogw_forget(w);
		return err;
	}
	*out = w;
	return 0;
}

static void rotate(struct alogw *w)
{
	struct stat st;
	if (fstat(w->fd, &st) < 0 || !S_ISREG(st.st_mode))
		return; /* only regular files are renamed */
	size_t n = strlen(w->path) + 16;
	char *a = malloc(n), *b = malloc(n);
	int err = (!a || !b) ? -ENOMEM : 0;
	if (!err && w->keep == 0) {
		err = unlink(w->path) < 0 ? -errno : 0;
	} else if (!err) {
		snprintf(a, n, "%s.%u", w->path, w->keep);
		unlink(a);
		for (unsigned i = w->keep; i > 1; i--) {
			snprintf(a, n, "%s.%u", w->path, i - 1);
			snprintf(b, n, "%s.%u", w->path, i);
			if (rename(a, b) < 0 && errno != ENOENT)
				err = -errno;
		}
		snprintf(b, n, "%s.1", w->path);
		if (!err && rename(w->path, b) < 0)
			err = -errno;
	}
	free(a);
	free(b);
	if (err) {
		stop(w, err, "rotating");
		return;
	}
	unmap_cut(w);
	close(w->fd);
	w->fd = -1;
	w->gen++;
	err = create_file(w, 0);
	if (err) {
		if (w->fd >= 0) {
			stop(w, err, "starting a new file after rotation");
		} else {
			snprintf(w->err, sizeof(w->err),
				 "starting a new file after rotation: %s",
				 strerror(-err));
		}
		return;
	}
	char note[128], buf[256];
	snprintf(note, sizeof(note), "rotated: file %u of this log",
		 w->gen + 1);
	size_t k = alog_note_payload(buf, sizeof(buf), note);
	if (k && (err = put(w, buf, k)) != 0)
		stop(w, err, "writing");
}

void alogw_begin(struct alogw *w)
{
	/* not in the middle of a trace attempt (records held): every file
	 * has whole attempts, start to stop */
	if (w && w->fd >= 0 && w->max_bytes && w->off >= w->max_bytes &&
	    w->plen == 0)
		rotate(w);
}

int alogw_defer(struct alogw *w, const void *payload, size_t len)
{
	if (!w || w->fd < 0)
		return -EBADF;
	if (len == 0 || len > ALOG_MAX_RECORD)
		return -EINVAL;
	size_t need = w->plen + ALOG_FRAME + len;
	if (need > w->pcap) {
		size_t cap = w->pcap ? w->pcap : 16384;
		while (cap < need)
			cap *= 2;
		uint8_t *p = realloc(w->pend, cap);
		if (!p) {
			stop(w, -ENOMEM, "buffering");
			return -ENOMEM;
		}
		w->pend = p;
		w->pcap = cap;
	}
	alog_frame(w->pend + w->plen, payload, (uint32_t)len);
	memcpy(w->pend + w->plen + ALOG_FRAME, payload, len);
	w->plen = need;
	w->pnrec++;
	/* a long recording (full level): do not hold more than 1 MiB */
	if (w->plen > (1u << 20))
		return alogw_flush(w);
	return 0;
}

int alogw_flush(struct alogw *w)
{
	if (!w || w->fd < 0)
		return -EBADF;
	if (!w->plen)
		return 0;
	if (w->off + w->plen + NOTE_ROOM > w->limit) {
		stop(w, -EFBIG, "writing");
		return -EFBIG;
	}
	int err = put(w, NULL, 0);
	if (err)
		stop(w, err, "writing");
	return err;
}

int alogw_write(struct alogw *w, const void *payload, size_t len)
{
	if (!w || w->fd < 0)
		return -EBADF;
	if (len == 0 || len > ALOG_MAX_RECORD)
		return -EINVAL;
	if (w->off + w->plen + ALOG_FRAME + len + NOTE_ROOM > w->limit) {
		stop(w, -EFBIG, "writing");
		return -EFBIG;
	}
	int err = put(w, payload, len);
	if (err)
		stop(w, err, "writing");
	return err;
}

unsigned alogw_gen(const struct alogw *w)
{
	return w ? w->gen : 0;
}

const char *alogw_error(const struct alogw *w)
{
	return w && w->err[0] ? w->err : NULL;
}

uint64_t alogw_bytes(const struct alogw *w)
{
	return w ? w->total : 0;
}

uint64_t alogw_records(const struct alogw *w)
{
	return w ? w->nrec : 0;
}

void alogw_close(struct alogw *w, const char *final_note)
{
	if (!w)
		return;
	if (w->fd >= 0)
		(void)alogw_flush(w);
	if (w->fd >= 0 && final_note) {
		char buf[640];
		size_t n = alog_note_payload(buf, sizeof(buf), final_note);
		if (n && w->off + ALOG_FRAME + n <= w->limit &&
		    put(w, buf, n) == -EIO)
			unmap(w); /* cut short under us: leave it */
	}
	if (w->fd >= 0)
		unmap_cut(w);
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	alogw_forget(w);
}

void alogw_forget(struct alogw *w)
{
	if (!w)
		return;
	unmap(w);
	if (w->fd >= 0)
		close(w->fd);
	free(w->path);
	free(w->header);
	free(w->pend);
	free(w);
}
