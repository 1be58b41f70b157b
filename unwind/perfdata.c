/* SPDX-License-Identifier: MIT */
/* perf.data reader (see perfdata.h). Layout (file mode):
 *   header: magic "PERFILE2", header size, attr_size, then the sections
 *           attrs {offset,size}, data {offset,size}, event_types, features
 *   attrs:  attr_size-byte entries: a perf_event_attr then {offset,size}
 *           of its ids (u64)
 *   data:   records {u32 type; u16 misc; u16 size; payload}, with the
 *           sample_id fields at the end of non-sample records when
 *           sample_id_all is set. */
#include "perfdata.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <liburing.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PERF_RECORD_FINISHED_ROUND_ 68
#define PERF_RECORD_COMPRESSED_ 81
#define MISC_MMAP_BUILD_ID (1u << 14)
#define MISC_COMM_EXEC (1u << 13)

/* pass 1 keeps the last PD_TAIL bytes of each record (pd_open): a
 * sample's dyn_size, after its stack copy, is in them (with the fields
 * that can follow it: DATA_SRC, WEIGHT, ...) */
enum { PD_TAIL = 32 };

struct rec {
	uint64_t off, time;
	uint64_t seq;
	unsigned char tail[PD_TAIL]; /* pd_open: the record's last bytes,
				      * if has_tail */
	uint16_t size;
	uint8_t has_tail;
};

/* pass 2 prefetches the headers and tails of the record PD_AHEAD ahead,
 * and the stack lines of the one PD_AHEAD / 2 ahead (found through its
 * header, in the cache by then) */
enum { PD_AHEAD = 8 };

/* pd_open reads the file with pread, not through a mapping: mapping
 * the page cache of a perf.data of 32 KB stack copies costs as much as
 * the unwinding (the kernel maps every page around a fault, and unmaps
 * them all at the end), where a walk reads the first KB or two of each
 * copy (1.4 KB in the bench recording's). pd_each's pass 1 reads the
 * records' headers through a small window (which takes the last bytes
 * of the record before as well: a sample's dyn_size), its pass 2 each
 * record's head and the first bytes of its stack copy (as far as the
 * last walk read: to the end of its deepest 64-byte line, no more, since
 * the copy is most of what the kernel spends on a read), the rest of a
 * copy only when a walk goes deeper (pd_stack_need). pd_each_restart does both
 * in one read per record where the file allows (stream). A pread costs ~0.6 us
 * here, so one per record, not two, is most of the gain. */
enum {
	PD_WIN = 512,	      /* pass 1's window */
	PD_WIN_BACK = 64,     /* of it, before the header looked for */
	PD_RB = 65536 + 64,   /* a record (sizes are u16) */
	PD_STACK_MIN = 512,   /* stack bytes read with a sample's head */
	PD_STACK_STEP = 4096, /* read more in steps of */
	PD_SB_START = 4096,   /* pd_each_restart: records start in a buffer
			       * before this, */
	PD_SB = PD_SB_START + 65536 + 256 /* and fit */
};

/* pd_open: a record read, its first have bytes at rb (buf: in sb[buf], or
 * -1: in rb) */
struct cur {
	unsigned char *rb;
	uint64_t off, have, size;
	int buf;
};

/* pd_each_restart: the file's [off, off + len) at b (PD_SB bytes) */
struct sbuf {
	unsigned char *b;
	uint64_t off, len;
};

/* pd_each_restart reads a record through io_uring where the kernel
 * allows it, together with more at the offsets the last sample's size
 * predicts (in a --call-graph dwarf recording most samples have the size
 * of the one before: 94% in the bench's, in runs of 16 on average), all
 * in one io_uring_enter, each into its own buffer, registered (a
 * fixed-buffer read is cheaper than a read into user memory); a record
 * is taken from whichever buffer holds its bytes, a buffer read at a
 * wrong offset is only not used. How many: PD_URING_K0 after a wrong
 * prediction, PD_URING_STEP more after a submission whose predictions
 * all held, up to PD_URING_K (a wrong read costs as much as a right one,
 * ~0.4 us: most of a read is the first cold lines of the page cache; a
 * submission ~0.4 us more). Measured on the bench's 27,620 records (1.7
 * KB read of each, thread CPU): one pread each 18.9 ms, io_uring with 2
 * reads a submission 17.7, 4 17.5, 8 17.9; in report (27,528 samples,
 * task-clock, medians of 11 alternating): 50.2 ms with pread, 47.4 with
 * 4 a submission, 46.6 adapting (2..16: 3,023 submissions, 1,336 preads
 * left, where a walk reads on). Where io_uring is refused (ENOSYS, EPERM,
 * io_uring_disabled, a memlock limit: 17 x 16 KB are pinned),
 * pd_each_restart reads with pread as before: the same bytes. */
enum {
	PD_URING_K = 16,	 /* reads a submission, at most */
	PD_URING_K0 = 2,	 /* after a wrong prediction */
	PD_URING_STEP = 2,	 /* more after a submission all right */
	PD_NSB = PD_URING_K + 1, /* buffers (one holds the record pending) */
	PD_URB = 16384		 /* of each buffer, registered (read at most) */
};

/* The reads ahead are made a batch at a time, before the samples before
 * them are decoded: the last sample's head and walk were up to 16 samples
 * old by then. On a 32,537-sample bench recording the first read fell
 * short of the walk 2,253 times with them (a pread each to read on; 2,004
 * of them because the head, the kernel callchain, was longer than the
 * last one's); with the longest of the last 16 heads and the deepest of
 * the last 4 walks 429 fewer preads and 466 fewer submissions (strace
 * -c: 2,616 -> 2,187 and 5,846 -> 5,380), about 1% more bytes read (a
 * replay of the samples' heads and walks: 44.1 -> 44.5 MB). */
enum { PD_HQ = 16, PD_WQ = 4 };

struct perfdata {
	const unsigned char *buf; /* pd_open_mem: the file; else NULL */
	size_t len;
	int fd;		   /* pd_open: the file; else -1 */
	unsigned char *wb; /* pass 1's window: the file's [wb_off, +wb_len) */
	uint64_t wb_off, wb_len;
	unsigned char *rb;	/* pass 2's buffer */
	struct cur c;		/* the record decoded */
	struct sbuf sb[PD_NSB]; /* pd_each_restart's buffers (two without
				 * io_uring) */
	struct io_uring *ring;	/* pd_each_restart's, or NULL */
	int ring_tried, ring_dead;
	unsigned batch;	     /* reads in the next submission */
	uint64_t batch_at;   /* where the last one's predictions ended */
	uint64_t stack_rel;  /* the sample's stack copy at c.rb + stack_rel */
	uint64_t stack_len;  /* its valid bytes (dyn_size) */
	uint64_t stack_have; /* of them read */
	uint64_t stack_want; /* stack bytes read with a sample's head */
	uint64_t head_want;  /* bytes before the stack copy, of the last */
	/* pd_each_restart's reads ahead (up to PD_URING_K records on, made
	 * before any of them is decoded) take the longest head of the last
	 * PD_HQ samples and the deepest stack of the last PD_WQ walks */
	uint32_t hq[PD_HQ], wq[PD_WQ];
	unsigned hq_n, wq_n;
	uint64_t batch_want;	   /* of wq */
	const unsigned char *tail; /* the record's last PD_TAIL bytes, or
				    * NULL */
	int ioerr;
	uint64_t sample_type, read_format, regs_mask, branch_type;
	uint64_t period, flags;
	uint32_t stack_user; /* sample_stack_user, of the first attr */
	int32_t clockid;     /* its clockid (valid with use_clockid) */
	int sample_id_all;
	uint64_t data_off, data_size;
	uint32_t pf[PD_PREFETCH]; /* pd_prefetch_stack */
	size_t npf;
};

static void failmsg(char *err, size_t n, const char *fmt, ...)
{
	if (err && n) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, n, fmt, ap);
		va_end(ap);
	}
}
/* The message, and -EBADMSG in the open: the analyzer does not follow a
 * variadic call's return value, and so saw failures returning 0. */
#define fail(err, n, ...) (failmsg(err, n, __VA_ARGS__), -EBADMSG)

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uint16_t rd16(const unsigned char *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

/* The bits set in x, inline: __builtin_popcountll is a call into libgcc
 * without -mpopcnt (three a sample, for pd_reg). */
static uint64_t popc64(uint64_t x)
{
	x -= (x >> 1) & 0x5555555555555555ull;
	x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (x * 0x0101010101010101ull) >> 56;
}

/* [off, off+n) inside [0, len)? */
static int inside(uint64_t off, uint64_t n, uint64_t len)
{
	return off <= len && n <= len - off;
}

struct hdr {
	uint64_t attr_size, attrs_off, attrs_size, data_off, data_size;
};

/* Check the file header: b holds the file's first min(len, 64) bytes. */
static int check_header(const unsigned char *b, size_t len, struct hdr *h,
			char *err, size_t errlen)
{
	if (len < 16 || memcmp(b, "PERFILE2", 8))
		return fail(err, errlen,
			    "not a perf.data file (no PERFILE2 magic)");
	uint64_t hsz = rd64(b + 8);
	if (hsz == 16)
		return fail(err, errlen,
			    "perf.data in pipe mode is not supported "
			    "(record with -o FILE)");
	if (hsz < 72 || !inside(0, hsz, len))
		return fail(err, errlen,
			    "perf.data header truncated (%zu bytes)", len);
	h->attr_size = rd64(b + 16);
	h->attrs_off = rd64(b + 24);
	h->attrs_size = rd64(b + 32);
	h->data_off = rd64(b + 40);
	h->data_size = rd64(b + 48);
	if (h->attr_size < 96 + 16 || h->attr_size > 4096 || !h->attrs_size ||
	    h->attrs_size % h->attr_size ||
	    !inside(h->attrs_off, h->attrs_size, len))
		return fail(err, errlen,
			    "perf.data attribute section bad or truncated");
	if (!inside(h->data_off, h->data_size, len))
		return fail(err, errlen,
			    "perf.data truncated: data section [%llu, +%llu) "
			    "beyond the file's %zu bytes",
			    (unsigned long long)h->data_off,
			    (unsigned long long)h->data_size, len);
	return 0;
}

/* The attributes (the section's bytes at ab) into a new handle. */
static int parse_attrs(struct perfdata **out, const struct hdr *h,
		       const unsigned char *ab, char *err, size_t errlen)
{
	struct perfdata *pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	pd->fd = -1;
	pd->data_off = h->data_off;
	pd->data_size = h->data_size;
	for (uint64_t a = 0; a < h->attrs_size / h->attr_size; a++) {
		const unsigned char *at = ab + a * h->attr_size;
		uint32_t asz = rd32(at + 4);
		if (asz < 96 || asz + 16 > h->attr_size) {
			free(pd);
			return fail(err, errlen,
				    "perf.data attribute %llu has size %u",
				    (unsigned long long)a, asz);
		}
		uint64_t st = rd64(at + 24), rf = rd64(at + 32),
			 fl = rd64(at + 40), rm = rd64(at + 80),
			 bt = rd64(at + 72), per = rd64(at + 16);
		if (a == 0) {
			pd->sample_type = st;
			pd->read_format = rf;
			pd->flags = fl;
			pd->regs_mask = rm;
			pd->branch_type = bt;
			pd->period = per;
			pd->stack_user = rd32(at + 88);
			pd->clockid = (int32_t)rd32(at + 92);
		} else if (st != pd->sample_type || rf != pd->read_format ||
			   rm != pd->regs_mask ||
			   ((fl ^ pd->flags) & (1ull << 18))) {
			free(pd);
			return fail(err, errlen,
				    "perf.data with events of different sample "
				    "formats is not supported");
		}
	}
	pd->sample_id_all = !!(pd->flags & (1ull << 18));
	*out = pd;
	return 0;
}

int pd_open_mem(struct perfdata **out, const void *buf, size_t len, char *err,
		size_t errlen)
{
	const unsigned char *b = buf;
	struct hdr h;
	*out = NULL;
	int r = check_header(b, len, &h, err, errlen);
	if (r)
		return r;
	r = parse_attrs(out, &h, b + h.attrs_off, err, errlen);
	if (r)
		return r;
	(*out)->buf = b;
	(*out)->len = len;
	return 0;
}

/* n bytes at off into dst: 0, or -1 (a short read: the file changed). */
static int pread_all(int fd, void *dst, size_t n, uint64_t off)
{
	unsigned char *d = dst;
	while (n) {
		ssize_t k = pread(fd, d, n, (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k == 0)
			errno = 0;
		if (k <= 0)
			return -1;
		d += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

int pd_open(struct perfdata **out, const char *path, char *err, size_t errlen)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	struct stat sb;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		snprintf(err, errlen, "%s: not a regular file", path);
		return -EINVAL;
	}
	size_t len = (size_t)sb.st_size;
	unsigned char hb[64] = {0};
	struct hdr h;
	unsigned char *ab = NULL;
	int r;
	if (pread_all(fd, hb, len < sizeof(hb) ? len : sizeof(hb), 0))
		goto rderr;
	if ((r = check_header(hb, len, &h, err, errlen)))
		goto out;
	if (!(ab = malloc(h.attrs_size))) {
		r = -ENOMEM;
		goto out;
	}
	if (pread_all(fd, ab, h.attrs_size, h.attrs_off))
		goto rderr;
	if ((r = parse_attrs(out, &h, ab, err, errlen)))
		goto out;
	free(ab);
	struct perfdata *pd = *out;
	pd->len = len;
	pd->fd = fd;
	pd->stack_want = PD_STACK_MIN;
	pd->wb = malloc(PD_WIN);
	pd->rb = malloc(PD_RB);
	if (!pd->wb || !pd->rb) {
		pd_close(pd);
		*out = NULL;
		return -ENOMEM;
	}
	/* both passes go from the front to the back: readahead */
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	return 0;
rderr:
	r = -EIO;
	snprintf(err, errlen, "%s: read: %s", path,
		 errno ? strerror(errno) : "short read");
out:
	free(ab);
	close(fd);
	return r;
}

void pd_close(struct perfdata *pd)
{
	if (!pd)
		return;
	if (pd->fd >= 0)
		close(pd->fd);
	free(pd->wb);
	free(pd->rb);
	if (pd->ring) {
		io_uring_queue_exit(pd->ring);
		free(pd->ring);
	}
	for (int k = 0; k < PD_NSB; k++)
		free(pd->sb[k].b);
	free(pd);
}

void pd_prefetch_stack(struct perfdata *pd, const uint32_t *off, size_t n)
{
	if (pd->fd >= 0) { /* the next sample's first read: as deep */
		uint64_t w = PD_STACK_MIN;
		for (size_t k = 0; k < n; k++)
			if ((uint64_t)off[k] + 64 > w)
				w = (uint64_t)off[k] + 64;
		pd->stack_want = w;
		pd->wq[pd->wq_n++ % PD_WQ] = (uint32_t)w;
		uint64_t bw = 0;
		for (int k = 0; k < PD_WQ; k++)
			if (pd->wq[k] > bw)
				bw = pd->wq[k];
		pd->batch_want = bw;
		return;
	}
	pd->npf = n < PD_PREFETCH ? n : PD_PREFETCH;
	memcpy(pd->pf, off, pd->npf * sizeof(*off));
}

/* pd_open: the record c's bytes [0, end) read (end <= its size); 0, or
 * -1 (ioerr set). */
static int cur_fill(struct perfdata *io, struct cur *c, uint64_t end)
{
	if (end <= c->have)
		return 0;
	if (pread_all(io->fd, c->rb + c->have, end - c->have,
		      c->off + c->have)) {
		io->ioerr = 1;
		return -1;
	}
	c->have = end;
	if (c->buf >= 0) { /* the buffer holds more now */
		struct sbuf *b = &io->sb[c->buf];
		uint64_t e = (uint64_t)(c->rb - b->b) + end;
		if (e > b->len)
			b->len = e;
	}
	return 0;
}

static int rb_fill(struct perfdata *io, uint64_t end)
{
	return cur_fill(io, &io->c, end);
}

int pd_stack_need(const struct pd_sample *s, uint64_t end)
{
	struct perfdata *io = s->src;
	if (!io)
		return end <= s->stack_size ? 0 : -1;
	if (end > io->stack_len)
		return -1;
	if (end <= io->stack_have)
		return 0;
	/* as deep as the last walk went (the first read fell short of it:
	 * this sample's head is longer), else on in steps */
	uint64_t want =
	    end <= io->stack_want
		? io->stack_want
		: (end + PD_STACK_STEP - 1) / PD_STACK_STEP * PD_STACK_STEP;
	if (want > io->stack_len)
		want = io->stack_len;
	if (rb_fill(io, io->stack_rel + want))
		return -1;
	io->stack_have = want;
	return 0;
}

uint64_t pd_sample_period_ns(const struct perfdata *pd)
{
	if (pd->flags & (1ull << 10)) /* freq */
		return pd->period ? 1000000000ull / pd->period : 0;
	return pd->period;
}

uint32_t pd_sample_stack_user(const struct perfdata *pd)
{
	return pd->sample_type & PERF_SAMPLE_STACK_USER ? pd->stack_user : 0;
}

int pd_clockid(const struct perfdata *pd)
{
	return pd->flags & (1ull << 25) ? pd->clockid : -1; /* use_clockid */
}

uint64_t pd_reg(const struct pd_sample *s, int reg, int *ok)
{
	if (!s->regs_abi || !(s->regs_mask & (1ull << reg))) {
		*ok = 0;
		return 0;
	}
	uint64_t idx = popc64(s->regs_mask & ((1ull << reg) - 1));
	*ok = 1;
	return rd64(s->regs + 8 * idx);
}

/* Bytes of the sample_id trailer of non-sample records. */
static uint64_t id_trailer(const struct perfdata *pd, uint64_t *time_from_end)
{
	uint64_t st = pd->sample_type, n = 0;
	*time_from_end = 0;
	if (!pd->sample_id_all)
		return 0;
	/* order: TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER */
	if (st & PERF_SAMPLE_IDENTIFIER)
		n += 8;
	if (st & PERF_SAMPLE_CPU)
		n += 8;
	if (st & PERF_SAMPLE_STREAM_ID)
		n += 8;
	if (st & PERF_SAMPLE_ID)
		n += 8;
	if (st & PERF_SAMPLE_TIME) {
		n += 8;
		*time_from_end = n;
	}
	if (st & PERF_SAMPLE_TID)
		n += 8;
	return n;
}

/* Parse a sample's payload p[0..n). io (pd_open): p is io->rb + 8, of
 * which what is needed is read here, the stack copy's bytes only as far
 * as the head's read took them (pd_stack_need reads on). */
static int parse_sample(const struct perfdata *pd, struct perfdata *io,
			const unsigned char *p, uint64_t n, struct pd_sample *s,
			uint64_t *time)
{
	uint64_t st = pd->sample_type, o = 0;
	memset(s, 0, sizeof(*s));
#define NEED(k)                                               \
	do {                                                  \
		if (!inside(o, (k), n))                       \
			return -1;                            \
		if (io && rb_fill(io, 8 + o + (uint64_t)(k))) \
			return -1;                            \
	} while (0)
	if (st & PERF_SAMPLE_IDENTIFIER) {
		NEED(8);
		o += 8;
	}
	if (st & PERF_SAMPLE_IP) {
		NEED(8);
		s->ip = rd64(p + o);
		o += 8;
	}
	if (st & PERF_SAMPLE_TID) {
		NEED(8);
		s->pid = rd32(p + o);
		s->tid = rd32(p + o + 4);
		o += 8;
	}
	if (st & PERF_SAMPLE_TIME) {
		NEED(8);
		s->time = rd64(p + o);
		o += 8;
	}
	if (st & PERF_SAMPLE_ADDR)
		o += 8;
	if (st & PERF_SAMPLE_ID)
		o += 8;
	if (st & PERF_SAMPLE_STREAM_ID)
		o += 8;
	if (st & PERF_SAMPLE_CPU)
		o += 8;
	if (st & PERF_SAMPLE_PERIOD)
		o += 8;
	if (st & PERF_SAMPLE_READ) {
		uint64_t rf = pd->read_format;
		uint64_t per = 8 + (rf & PERF_FORMAT_ID ? 8 : 0) +
			       (rf & PERF_FORMAT_LOST ? 8 : 0);
		if (rf & PERF_FORMAT_GROUP) {
			NEED(8);
			uint64_t nr = rd64(p + o);
			o += 8;
			if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED)
				o += 8;
			if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING)
				o += 8;
			if (nr > n / per)
				return -1;
			o += nr * per;
		} else {
			o += per +
			     (rf & PERF_FORMAT_TOTAL_TIME_ENABLED ? 8 : 0) +
			     (rf & PERF_FORMAT_TOTAL_TIME_RUNNING ? 8 : 0);
		}
	}
	if (st & PERF_SAMPLE_CALLCHAIN) {
		NEED(8);
		uint64_t nr = rd64(p + o);
		o += 8;
		if (nr > n / 8)
			return -1;
		NEED(nr * 8);
		s->nr_callchain = nr;
		s->callchain = (const uint64_t *)(const void *)(p + o);
		o += nr * 8;
	}
	if (st & PERF_SAMPLE_RAW) {
		NEED(4);
		uint32_t sz = rd32(p + o);
		o += 4;
		NEED(sz);
		o += sz;
	}
	if (st & PERF_SAMPLE_BRANCH_STACK) {
		NEED(8);
		uint64_t nr = rd64(p + o);
		o += 8;
		if (pd->branch_type & PERF_SAMPLE_BRANCH_HW_INDEX)
			o += 8;
		if (nr > n / 24)
			return -1;
		o += nr * 24;
	}
	if (st & PERF_SAMPLE_REGS_USER) {
		NEED(8);
		s->regs_abi = rd64(p + o);
		o += 8;
		if (s->regs_abi) {
			uint64_t k = popc64(pd->regs_mask);
			NEED(k * 8);
			s->regs_mask = pd->regs_mask;
			s->regs = p + o;
			o += k * 8;
		}
	}
	if (st & PERF_SAMPLE_STACK_USER) {
		NEED(8);
		uint64_t sz = rd64(p + o);
		o += 8;
		if (sz) {
			if (!inside(o, sz, n))
				return -1;
			s->stack = p + o;
			uint64_t so = o;
			o += sz;
			if (!inside(o, 8, n))
				return -1;
			uint64_t dyn;
			if (!io || 8 + o + 8 <= io->c.have) {
				dyn = rd64(p + o);
			} else if (io->tail && io->c.size >= PD_TAIL &&
				   8 + o >= io->c.size - PD_TAIL) {
				/* from pass 1's window */
				dyn = rd64(io->tail +
					   (8 + o - (io->c.size - PD_TAIL)));
			} else {
				unsigned char d8[8];
				if (pread_all(io->fd, d8, 8,
					      io->c.off + 8 + o)) {
					io->ioerr = 1;
					return -1;
				}
				dyn = rd64(d8);
			}
			s->stack_size = dyn < sz ? dyn : sz;
			if (io) {
				io->stack_rel = 8 + so;
				io->stack_len = s->stack_size;
				io->stack_have =
				    io->c.have > io->stack_rel
					? io->c.have - io->stack_rel
					: 0;
				if (io->stack_have > io->stack_len)
					io->stack_have = io->stack_len;
				s->stack_have = &io->stack_have;
				s->src = io;
			}
		}
	}
#undef NEED
	*time = s->time;
	return 0;
}

/* Sort by (time, seq): a natural merge sort (stable, so by time alone:
 * seq is the original order), linear on the sorted runs that perf's
 * rounds leave. The same order as qsort by (time, seq), the keys being
 * unique, at a fraction of qsort's calls through a pointer. 0, or -ENOMEM. */
static int rec_sort(struct rec *rs, size_t nr)
{
	struct rec *tmp = malloc(nr * sizeof(*rs));
	if (!tmp)
		return -ENOMEM;
	struct rec *a = rs, *b = tmp;
	for (;;) {
		size_t runs = 0;
		for (size_t lo = 0; lo < nr;) {
			size_t mid = lo + 1;
			while (mid < nr && a[mid - 1].time <= a[mid].time)
				mid++;
			size_t hi = mid;
			if (mid < nr) {
				hi = mid + 1;
				while (hi < nr && a[hi - 1].time <= a[hi].time)
					hi++;
			}
			size_t i = lo, j = mid, k = lo;
			while (i < mid && j < hi)
				b[k++] =
				    a[j].time < a[i].time ? a[j++] : a[i++];
			while (i < mid)
				b[k++] = a[i++];
			while (j < hi)
				b[k++] = a[j++];
			runs++;
			lo = hi;
		}
		struct rec *t = a;
		a = b;
		b = t;
		if (runs <= 1)
			break;
	}
	if (a != rs)
		memcpy(rs, a, nr * sizeof(*rs));
	free(tmp);
	return 0;
}

/* Decode record at offset into e; 1 if it is an event for the caller, 0
 * if skipped, -1 malformed (message in err). */
static int decode(const struct perfdata *pd, struct perfdata *io,
		  const unsigned char *r, uint64_t off, struct pd_event *e,
		  char *err, size_t errlen)
{
	uint32_t type = rd32(r);
	uint16_t misc = rd16(r + 4), size = rd16(r + 6);
	const unsigned char *p = r + 8;
	uint64_t n = size - 8, tfe;
	uint64_t trail =
	    type == PERF_RECORD_SAMPLE || type >= 64 ? 0 : id_trailer(pd, &tfe);
	memset(e, 0, sizeof(*e));
	if (type != PERF_RECORD_SAMPLE && type < 64) {
		if (trail > n)
			goto bad;
		if (trail && tfe)
			e->time = rd64(p + n - tfe);
		n -= trail;
	}
	switch (type) {
	case PERF_RECORD_SAMPLE:
		e->kind = PD_SAMPLE;
		if (parse_sample(pd, io, p, n, &e->u.s, &e->time))
			goto bad;
		return 1;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2: {
		struct pd_mmap *m = &e->u.m;
		e->kind = PD_MMAP;
		uint64_t fixed = type == PERF_RECORD_MMAP ? 32 : 32 + 24 + 8;
		if (n < fixed + 1)
			goto bad;
		m->pid = rd32(p);
		m->tid = rd32(p + 4);
		m->start = rd64(p + 8);
		m->len = rd64(p + 16);
		m->pgoff = rd64(p + 24);
		if (type == PERF_RECORD_MMAP2) {
			if (misc & MISC_MMAP_BUILD_ID) {
				m->build_id_size = p[32];
				if (m->build_id_size > 20)
					goto bad;
				memcpy(m->build_id, p + 36, 20);
				m->has_build_id = m->build_id_size > 0;
			}
			m->prot = rd32(p + 56);
		} else {
			m->prot = PROT_EXEC;
		}
		const char *fn = (const char *)p + fixed;
		if (!memchr(fn, 0, n - fixed))
			goto bad;
		m->filename = fn;
		m->time = e->time;
		return 1;
	}
	case PERF_RECORD_COMM:
		e->kind = PD_COMM;
		if (n < 9 || !memchr(p + 8, 0, n - 8))
			goto bad;
		e->u.comm.pid = rd32(p);
		e->u.comm.tid = rd32(p + 4);
		e->u.comm.exec = !!(misc & MISC_COMM_EXEC);
		e->u.comm.comm = (const char *)p + 8;
		return 1;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		e->kind = type == PERF_RECORD_FORK ? PD_FORK : PD_EXIT;
		if (n < 24)
			goto bad;
		e->u.fork.pid = rd32(p);
		e->u.fork.ppid = rd32(p + 4);
		e->u.fork.tid = rd32(p + 8);
		e->u.fork.ptid = rd32(p + 12);
		if (!e->time)
			e->time = rd64(p + 16);
		return 1;
	case PERF_RECORD_COMPRESSED_:
		snprintf(err, errlen,
			 "compressed perf.data (perf record -z) is not "
			 "supported");
		return -1;
	default:
		return 0;
	}
bad:
	if (io && io->ioerr) {
		snprintf(err, errlen,
			 "perf.data: read error at offset %llu (the file "
			 "changed?)",
			 (unsigned long long)off);
		return -1;
	}
	snprintf(err, errlen,
		 "perf.data: malformed record (type %u, %u bytes) at offset "
		 "%llu",
		 type, size, (unsigned long long)off);
	return -1;
}

/* Where pass 1 finds a record's time: its offset in the record, or 0 */
static uint64_t time_pos(const struct perfdata *pd, uint32_t type,
			 uint16_t size)
{
	uint64_t st = pd->sample_type;
	if (type == PERF_RECORD_SAMPLE) {
		if (!(st & PERF_SAMPLE_TIME))
			return 0;
		uint64_t to = 8;
		to += st & PERF_SAMPLE_IDENTIFIER ? 8 : 0;
		to += st & PERF_SAMPLE_IP ? 8 : 0;
		to += st & PERF_SAMPLE_TID ? 8 : 0;
		return to + 8 <= size ? to : 0;
	}
	if (type < 64 && pd->sample_id_all) {
		uint64_t tfe, tr = id_trailer(pd, &tfe);
		return tfe && tr + 8 <= size ? size - tfe : 0;
	}
	return 0;
}

/* The records pd_each passes on (or fails on) */
static int indexed(uint32_t type)
{
	return type == PERF_RECORD_SAMPLE || type == PERF_RECORD_MMAP ||
	       type == PERF_RECORD_MMAP2 || type == PERF_RECORD_COMM ||
	       type == PERF_RECORD_FORK || type == PERF_RECORD_EXIT ||
	       type == PERF_RECORD_COMPRESSED_;
}

/* pass 1 (pd_open): the bytes [off, off + n) of the data section (n <=
 * PD_WIN - PD_WIN_BACK), through the window; NULL on a read error. */
static const unsigned char *win(struct perfdata *pd, uint64_t off, uint64_t n)
{
	if (pd->buf)
		return pd->buf + off;
	if (off >= pd->wb_off && off - pd->wb_off <= pd->wb_len &&
	    n <= pd->wb_len - (off - pd->wb_off))
		return pd->wb + (off - pd->wb_off);
	uint64_t from = off - pd->data_off >= PD_WIN_BACK ? off - PD_WIN_BACK
							  : pd->data_off;
	uint64_t end = pd->data_off + pd->data_size, len = PD_WIN;
	if (len > end - from)
		len = end - from;
	if (pread_all(pd->fd, pd->wb, len, from)) {
		pd->wb_len = 0;
		return NULL;
	}
	pd->wb_off = from;
	pd->wb_len = len;
	return pd->wb + (off - from);
}

int pd_each(struct perfdata *pd, int (*cb)(const struct pd_event *e, void *ctx),
	    void *ctx, char *err, size_t errlen)
{
	/* pass 1: index the records with their times */
	size_t cap = 1024, nr = 0;
	struct rec *rs = malloc(cap * sizeof(*rs));
	if (!rs)
		return -ENOMEM;
	uint64_t off = pd->data_off, end = pd->data_off + pd->data_size,
		 last_t = 0;
	int r = 0, sorted = 1;
	const unsigned char *q;
	pd->wb_off = pd->wb_len = 0;
	while (off < end) {
		if (end - off < 8) {
			r = fail(
			    err, errlen,
			    "perf.data truncated: partial record header at "
			    "offset %llu",
			    (unsigned long long)off);
			goto out;
		}
		if (!(q = win(pd, off, 8)))
			goto rderr;
		uint16_t size = rd16(q + 6);
		uint32_t type = rd32(q);
		/* the last bytes of the record before (a sample's dyn_size),
		 * in the window with this header */
		if (!pd->buf && nr && rs[nr - 1].off + rs[nr - 1].size == off &&
		    rs[nr - 1].size >= PD_TAIL && off - pd->wb_off >= PD_TAIL) {
			memcpy(rs[nr - 1].tail, q - PD_TAIL, PD_TAIL);
			rs[nr - 1].has_tail = 1;
		}
		if (size < 8 || size > end - off) {
			r = fail(err, errlen,
				 "perf.data truncated or corrupt: record of %u "
				 "bytes at offset %llu (data ends at %llu)",
				 size, (unsigned long long)off,
				 (unsigned long long)end);
			goto out;
		}
		uint64_t t = last_t, tp = time_pos(pd, type, size);
		if (tp) {
			if (!(q = win(pd, off + tp, 8)))
				goto rderr;
			t = rd64(q);
		}
		if (!t && type != PERF_RECORD_SAMPLE)
			t = last_t;
		if (indexed(type)) {
			if (nr == cap) {
				cap *= 2;
				struct rec *n2 = realloc(rs, cap * sizeof(*rs));
				if (!n2) {
					r = -ENOMEM;
					goto out;
				}
				rs = n2;
			}
			if (nr && t < rs[nr - 1].time)
				sorted = 0;
			rs[nr].off = off;
			rs[nr].time = t;
			rs[nr].seq = nr;
			rs[nr].size = size;
			rs[nr].has_tail = 0;
			nr++;
		}
		if (t)
			last_t = t;
		off += size;
	}
	if (!sorted && (r = rec_sort(rs, nr)))
		goto out;
	/* pass 2: decode in time order; from a mapping (pd_open_mem), the
	 * records a few ahead prefetched (their pages are mapped by now:
	 * pass 1 touched every one); else each record read (pd_open): a
	 * sample's head and the first bytes of its stack copy, as far as
	 * the last walk went and some */
	struct perfdata *io = pd->buf ? NULL : pd;
	pd->head_want = 512;
	for (size_t i = 0; i < nr; i++) {
		if (!io && i + PD_AHEAD < nr) {
			q = pd->buf + rs[i + PD_AHEAD].off;
			uint16_t qs = rs[i + PD_AHEAD].size;
			__builtin_prefetch(q);
			__builtin_prefetch(q + 64);
			__builtin_prefetch(q + 128);
			__builtin_prefetch(q + 192);
			__builtin_prefetch(q + qs - 8);
		}
		if (!io && pd->npf && i + PD_AHEAD / 2 < nr) {
			const struct rec *h = &rs[i + PD_AHEAD / 2];
			q = pd->buf + h->off;
			struct pd_sample hs;
			uint64_t ht;
			if (rd32(q) == PERF_RECORD_SAMPLE &&
			    !parse_sample(pd, NULL, q + 8, h->size - 8u, &hs,
					  &ht) &&
			    hs.stack)
				for (size_t k = 0; k < pd->npf; k++)
					if (pd->pf[k] < hs.stack_size)
						__builtin_prefetch(hs.stack +
								   pd->pf[k]);
		}
		const unsigned char *rp = io ? NULL : pd->buf + rs[i].off;
		if (io) {
			io->c.rb = io->rb;
			io->c.buf = -1;
			io->c.off = rs[i].off;
			io->c.size = rs[i].size;
			io->c.have = 0;
			io->tail = rs[i].has_tail ? rs[i].tail : NULL;
			io->ioerr = 0;
			uint64_t first = io->head_want + io->stack_want;
			if (first > rs[i].size)
				first = rs[i].size;
			if (rb_fill(io, first) ||
			    (rd32(io->c.rb) != PERF_RECORD_SAMPLE &&
			     rb_fill(io, rs[i].size))) {
				off = rs[i].off;
				goto rderr;
			}
			rp = io->c.rb;
		}
		struct pd_event e;
		int d = decode(pd, io, rp, rs[i].off, &e, err, errlen);
		if (d < 0) {
			r = -EBADMSG;
			goto out;
		}
		if (d == 0)
			continue;
		if (io && e.kind == PD_SAMPLE && e.u.s.stack)
			io->head_want = io->stack_rel;
		if (!e.time)
			e.time = rs[i].time;
		r = cb(&e, ctx);
		if (r)
			goto out;
	}
out:
	free(rs);
	return r;
rderr:
	r = fail(err, errlen,
		 "perf.data: read error at offset %llu (the file changed?)",
		 (unsigned long long)off);
	goto out;
}

/* The read of a record at off (want bytes of it wished for): from
 * PD_TAIL before it (the record before's last bytes), *len bytes
 * (capped at cap and at the data's end). */
static uint64_t st_from(const struct perfdata *io, uint64_t off, uint64_t want,
			uint64_t cap, uint64_t *len)
{
	uint64_t end = io->data_off + io->data_size;
	uint64_t from =
	    off - io->data_off >= PD_TAIL ? off - PD_TAIL : io->data_off;
	uint64_t n = (off - from) + want;
	if (n > cap)
		n = cap;
	if (n > end - from)
		n = end - from;
	*len = n;
	return from;
}

/* pd_each_restart's ring (PD_URING_K entries, the buffers' first PD_URB
 * bytes registered), or NULL where the kernel refuses it: tried once. */
static struct io_uring *st_ring(struct perfdata *io)
{
	if (io->ring_tried)
		return io->ring_dead ? NULL : io->ring;
	io->ring_tried = 1;
	struct io_uring *ring = calloc(1, sizeof(*ring));
	if (!ring)
		return NULL;
	if (io_uring_queue_init(PD_URING_K, ring, 0) < 0) {
		free(ring);
		return NULL;
	}
	struct iovec iov[PD_NSB];
	for (int k = 0; k < PD_NSB; k++)
		iov[k] = (struct iovec){io->sb[k].b, PD_URB};
	if (io_uring_register_buffers(ring, iov, PD_NSB) < 0 ||
	    io_uring_register_files(ring, &io->fd, 1) < 0) {
		io_uring_queue_exit(ring);
		free(ring);
		return NULL;
	}
	io->ring = ring;
	return ring;
}

/* Read the record at off and the PD_URING_K - 1 after it at off + pred,
 * off + 2 pred, ... (pred: the last sample's size) into the buffers
 * other than avoid, in one submission: 0 (the buffers hold what was
 * read: a failed read, none), or -1 (no ring). */
static int st_batch(struct perfdata *io, uint64_t off, uint64_t want,
		    uint64_t pred, int avoid)
{
	struct io_uring *ring = st_ring(io);
	if (!ring)
		return -1;
	uint64_t end = io->data_off + io->data_size, p = off;
	unsigned n = 0;
	/* as many as the predictions have been right for, in steps */
	if (off == io->batch_at && io->batch)
		io->batch = io->batch + PD_URING_STEP < PD_URING_K
				? io->batch + PD_URING_STEP
				: PD_URING_K;
	else
		io->batch = PD_URING_K0;
	for (int k = 0; k < PD_NSB && p < end && n < io->batch; k++) {
		if (k == avoid)
			continue;
		struct io_uring_sqe *q = io_uring_get_sqe(ring);
		if (!q)
			break;
		struct sbuf *b = &io->sb[k];
		uint64_t len, from = st_from(io, p, want, PD_URB, &len);
		io_uring_prep_read_fixed(q, 0, b->b, (unsigned)len, (off_t)from,
					 k);
		q->flags |= IOSQE_FIXED_FILE;
		io_uring_sqe_set_data64(q, (uint64_t)k);
		b->off = from;
		b->len = 0; /* until its read is done */
		n++;
		p += pred;
	}
	io->batch_at = p;
	/* every read submitted is waited for: the kernel writes into the
	 * buffers until then */
	unsigned sub = 0, got = 0;
	while (sub < n) {
		int r = io_uring_submit(ring);
		if (r == -EINTR)
			continue;
		if (r <= 0)
			break;
		sub += (unsigned)r;
	}
	while (got < sub) {
		struct io_uring_cqe *cqe;
		int w = io_uring_wait_cqe(ring, &cqe);
		if (w == -EINTR || w == -EAGAIN)
			continue;
		if (w < 0)
			break;
		uint64_t k = io_uring_cqe_get_data64(cqe);
		if (k < PD_NSB && cqe->res > 0)
			io->sb[k].len = (uint64_t)cqe->res;
		io_uring_cqe_seen(ring, cqe);
		got++;
	}
	if (sub < n || got < sub) {
		/* reads left in the queue, or not seen done: no more of
		 * them, and no buffer of this batch used (the ring goes at
		 * pd_close, which waits for what the kernel still does) */
		for (int k = 0; k < PD_NSB; k++)
			if (k != avoid)
				io->sb[k].len = 0;
		io->ring_dead = 1;
		return -1;
	}
	return 0;
}

/* The buffer that holds the record at off (its first 8 bytes), or -1 */
static int st_find(const struct perfdata *io, uint64_t off)
{
	for (int k = 0; k < PD_NSB; k++) {
		const struct sbuf *b = &io->sb[k];
		if (b->b && off >= b->off && off - b->off <= PD_SB_START &&
		    b->len >= off - b->off + 8)
			return k;
	}
	return -1;
}

/* pd_each_restart: the record at off readable in c (its first 8 bytes at
 * least, want wished for): from the buffer that holds it, else read
 * (with those pred after it apart, through io_uring, where there is one
 * and pred is known) into the buffer(s) other than avoid (whose record
 * is still to be decoded), from PD_TAIL before it (the record before's
 * last bytes). 0, or -1. */
static int st_load(struct perfdata *io, struct cur *c, uint64_t off,
		   uint64_t want, uint64_t pred, int avoid)
{
	int k = st_find(io, off);
	if (k < 0 && pred && !st_batch(io, off, want, pred, avoid))
		k = st_find(io, off);
	struct sbuf *b;
	if (k < 0) {
		k = avoid == 0 ? 1 : 0;
		b = &io->sb[k];
		uint64_t len,
		    from = st_from(io, off, want, PD_SB_START + 65536, &len);
		if (pread_all(io->fd, b->b, len, from)) {
			b->len = 0;
			return -1;
		}
		b->off = from;
		b->len = len;
	}
	b = &io->sb[k];
	c->buf = k;
	c->rb = b->b + (off - b->off);
	c->off = off;
	c->have = b->len - (off - b->off);
	c->size = c->have;
	return 0;
}

/* pd_each_restart: a record held back (its time later than the records
 * after it: perf inject's MMAP2 of a jitted-*.so has the jitdump's time,
 * ahead of the samples that follow), a copy of all its bytes */
struct held {
	uint64_t t, seq, off;
	uint16_t size;
	unsigned char *b;
};

enum { PD_HELD_MAX = 1024, PD_HELD_BYTES = 16 << 20 };

/* Pass on the record c (time t): 0 (*stop: the cb's return), or -1 (a
 * decode would fail). */
static int st_pass(struct perfdata *io, struct cur *c,
		   const unsigned char *tail, uint64_t t,
		   int (*cb)(const struct pd_event *e, void *ctx), void *ctx,
		   char *err, size_t errlen, int *stop)
{
	io->c = *c;
	io->tail = tail;
	io->ioerr = 0;
	if (rd32(io->c.rb) != PERF_RECORD_SAMPLE &&
	    cur_fill(io, &io->c, io->c.size))
		return -1;
	struct pd_event e;
	int d = decode(io, io, io->c.rb, io->c.off, &e, err, errlen);
	if (d < 0)
		return -1;
	if (d > 0) {
		if (e.kind == PD_SAMPLE && e.u.s.stack) {
			io->hq[io->hq_n++ % PD_HQ] = (uint32_t)io->stack_rel;
			uint64_t hw = 0;
			for (int k = 0; k < PD_HQ; k++)
				if (io->hq[k] > hw)
					hw = io->hq[k];
			io->head_want = hw;
		}
		if (!e.time)
			e.time = t;
		*stop = cb(&e, ctx);
	}
	return 0;
}

/* Pass on the first out of those held back (the last of hd): 0, or -1 */
static int st_held(struct perfdata *io, struct held *hd, size_t *nhd,
		   size_t *hd_bytes,
		   int (*cb)(const struct pd_event *e, void *ctx), void *ctx,
		   char *err, size_t errlen, int *stop, uint64_t *out_t,
		   int *delivered)
{
	struct held h = hd[--*nhd];
	struct cur hc = {h.b, h.off, h.size, h.size, -1};
	int bad =
	    !*stop && st_pass(io, &hc, NULL, h.t, cb, ctx, err, errlen, stop);
	free(h.b);
	*hd_bytes -= h.size;
	*delivered = 1;
	*out_t = h.t;
	return bad ? -1 : 0;
}

/* pd_each_restart's single pass: the records in file order, as pass 1
 * reads them, each passed on once the next one's header is read (a
 * sample's dyn_size is in that read), those whose time is later than the
 * latest sample's held back until the samples reach it. The events go
 * out in (time, file order) order, as pass 2 has them, provided no
 * record comes after one with a later time that went out before it: then
 * (and where pass 1 or a decode would fail, or a read does) *again is
 * set, the events that went out are undone by reset, and pd_each does it
 * all again (and says what failed). Returns 0, or the cb's return. */
static int stream(struct perfdata *io,
		  int (*cb)(const struct pd_event *e, void *ctx),
		  void (*reset)(void *ctx), void *ctx, char *err, size_t errlen,
		  int *again)
{
	*again = 0;
	for (int k = 0; k < PD_NSB; k++) {
		if (!io->sb[k].b && !(io->sb[k].b = malloc(PD_SB))) {
			*again = 1;
			return 0;
		}
		io->sb[k].off = io->sb[k].len = 0;
	}
	struct held *hd =
	    NULL; /* by (t, seq), descending: the first out last */
	size_t nhd = 0, hd_bytes = 0;
	uint64_t off = io->data_off, end = io->data_off + io->data_size,
		 last_t = 0, pend_t = 0, pend_seq = 0, pend_end = 0, seq = 0;
	uint64_t smp_size = 0; /* the last sample's size */
	uint64_t out_t = 0;    /* the time of the last event out */
	uint64_t smp_t = 0; /* the latest sample's: records up to it go out */
	struct cur sc, pend = {0};
	unsigned char pend_tail[PD_TAIL];
	int have_pend = 0, pend_tail_ok = 0, delivered = 0, stop = 0, r = 0;
	io->head_want = 512;
	memset(io->hq, 0, sizeof(io->hq));
	memset(io->wq, 0, sizeof(io->wq));
	io->hq_n = io->wq_n = 0;
	io->batch_want = io->stack_want;
	for (;;) {
		uint32_t type = 0;
		uint16_t size = 0;
		uint64_t t = last_t;
		int idx = 0;
		if (off < end) {
			if (end - off < 8 ||
			    st_load(io, &sc, off,
				    io->head_want + io->batch_want, smp_size,
				    have_pend ? pend.buf : -1))
				goto again;
			size = rd16(sc.rb + 6);
			type = rd32(sc.rb);
			if (have_pend && off == pend_end &&
			    sc.rb - io->sb[sc.buf].b >= PD_TAIL) {
				memcpy(pend_tail, sc.rb - PD_TAIL, PD_TAIL);
				pend_tail_ok = 1;
			}
			if (size < 8 || size > end - off)
				goto again;
			sc.size = size;
			if (sc.have > size)
				sc.have = size;
			uint64_t tp = time_pos(io, type, size);
			if (tp) {
				if (cur_fill(io, &sc, tp + 8))
					goto again;
				t = rd64(sc.rb + tp);
			}
			if (!t && type != PERF_RECORD_SAMPLE)
				t = last_t;
			idx = indexed(type);
			if (idx && delivered && t < out_t)
				goto again; /* it belongs before one gone out */
			if (type == PERF_RECORD_SAMPLE && t > smp_t)
				smp_t = t;
			if (type == PERF_RECORD_SAMPLE)
				smp_size = size;
		}
		if (have_pend && (off >= end || idx)) {
			/* the record before: out (after those held back that
			 * come first), or held back too */
			/* up to the latest sample's time, and never past
			 * this record's (it comes before the later ones) */
			uint64_t upto = off >= end  ? UINT64_MAX
					: t < smp_t ? t
						    : smp_t;
			if (pend_t <= upto) {
				while (nhd && hd[nhd - 1].t <= pend_t)
					if (st_held(io, hd, &nhd, &hd_bytes, cb,
						    ctx, err, errlen, &stop,
						    &out_t, &delivered))
						goto again;
				if (!stop &&
				    st_pass(io, &pend,
					    pend_tail_ok ? pend_tail : NULL,
					    pend_t, cb, ctx, err, errlen,
					    &stop))
					goto again;
				delivered = 1;
				out_t = pend_t;
			} else {
				if (nhd == PD_HELD_MAX ||
				    hd_bytes + pend.size > PD_HELD_BYTES)
					goto again;
				if (!hd &&
				    !(hd = malloc(PD_HELD_MAX * sizeof(*hd))))
					goto again;
				unsigned char *b = malloc(pend.size);
				if (!b)
					goto again;
				memcpy(b, pend.rb, pend.have);
				if (pend.have < pend.size &&
				    pread_all(io->fd, b + pend.have,
					      pend.size - pend.have,
					      pend.off + pend.have)) {
					free(b);
					goto again;
				}
				size_t k = nhd;
				while (k && (hd[k - 1].t < pend_t ||
					     (hd[k - 1].t == pend_t &&
					      hd[k - 1].seq < pend_seq))) {
					hd[k] = hd[k - 1];
					k--;
				}
				hd[k] = (struct held){pend_t, pend_seq,
						      pend.off, pend.size, b};
				nhd++;
				hd_bytes += pend.size;
			}
			have_pend = 0;
			/* and those held back that come before this one */
			while (nhd && hd[nhd - 1].t <= upto)
				if (st_held(io, hd, &nhd, &hd_bytes, cb, ctx,
					    err, errlen, &stop, &out_t,
					    &delivered))
					goto again;
		}
		if (off >= end)
			break;
		if (idx) {
			pend = sc;
			pend_t = t;
			pend_seq = seq++;
			pend_end = off + size;
			pend_tail_ok = 0;
			have_pend = 1;
		}
		if (t)
			last_t = t;
		off += size;
	}
	r = stop;
	goto out;
again:
	if (delivered)
		reset(ctx);
	*again = 1;
	if (err && errlen)
		err[0] = 0;
out:
	while (nhd)
		free(hd[--nhd].b);
	free(hd);
	return r;
}

int pd_each_restart(struct perfdata *pd,
		    int (*cb)(const struct pd_event *e, void *ctx),
		    void (*reset)(void *ctx), void *ctx, char *err,
		    size_t errlen)
{
	if (pd->buf || !reset)
		return pd_each(pd, cb, ctx, err, errlen);
	int again, r = stream(pd, cb, reset, ctx, err, errlen, &again);
	return again ? pd_each(pd, cb, ctx, err, errlen) : r;
}
