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

struct rec {
	uint64_t off, time;
	uint64_t seq;
	uint16_t size;
};

/* pass 2 prefetches the headers and tails of the record PD_AHEAD ahead,
 * and the stack lines of the one PD_AHEAD / 2 ahead (found through its
 * header, in the cache by then) */
enum { PD_AHEAD = 8 };

struct perfdata {
	const unsigned char *buf;
	size_t len;
	void *map; /* mmap'd by pd_open, else NULL */
	size_t map_len;
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

/* [off, off+n) inside [0, len)? */
static int inside(uint64_t off, uint64_t n, uint64_t len)
{
	return off <= len && n <= len - off;
}

int pd_open_mem(struct perfdata **out, const void *buf, size_t len, char *err,
		size_t errlen)
{
	const unsigned char *b = buf;
	*out = NULL;
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
	uint64_t attr_size = rd64(b + 16), attrs_off = rd64(b + 24),
		 attrs_size = rd64(b + 32), data_off = rd64(b + 40),
		 data_size = rd64(b + 48);
	if (attr_size < 96 + 16 || attr_size > 4096 || !attrs_size ||
	    attrs_size % attr_size || !inside(attrs_off, attrs_size, len))
		return fail(err, errlen,
			    "perf.data attribute section bad or truncated");
	if (!inside(data_off, data_size, len))
		return fail(err, errlen,
			    "perf.data truncated: data section [%llu, +%llu) "
			    "beyond the file's %zu bytes",
			    (unsigned long long)data_off,
			    (unsigned long long)data_size, len);
	struct perfdata *pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	pd->buf = b;
	pd->len = len;
	pd->data_off = data_off;
	pd->data_size = data_size;
	for (uint64_t a = 0; a < attrs_size / attr_size; a++) {
		const unsigned char *at = b + attrs_off + a * attr_size;
		uint32_t asz = rd32(at + 4);
		if (asz < 96 || asz + 16 > attr_size) {
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
	void *m = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
	close(fd);
	if (len && m == MAP_FAILED) {
		int e = errno;
		snprintf(err, errlen, "%s: mmap: %s", path, strerror(e));
		return -e;
	}
	/* Both passes walk the file from front to back: readahead. (Not
	 * MADV_RANDOM: that does not stop the kernel's fault-around, which
	 * maps the cached pages around each fault either way, but it makes
	 * every page not in the page cache one synchronous read of 4 KB of
	 * its own: 3.3 s instead of 0.8 s for a report of a 860 MB
	 * perf.data read from disk, 1.9 s instead of 0.4 s with half of it
	 * cached; no difference when all of it is.) */
	if (len)
		madvise(m, len, MADV_SEQUENTIAL);
	/* And huge pages: what is read in from disk through this mapping
	 * then comes in 2 MB folios, mapped by one entry each (the rest of
	 * the costs of the walk, and their unmapping, go with the number of
	 * entries: a report of the 860 MB bench recording in 12 ms of CPU
	 * instead of 75 once read in so, with --no-write). What the page
	 * cache already holds stays in the folios it has. */
	if (len)
		madvise(m, len, MADV_HUGEPAGE);
	int r = pd_open_mem(out, m, len, err, errlen);
	if (r) {
		if (len)
			munmap(m, len);
		return r;
	}
	(*out)->map = m;
	(*out)->map_len = len;
	return 0;
}

void pd_close(struct perfdata *pd)
{
	if (!pd)
		return;
	if (pd->map)
		munmap(pd->map, pd->map_len);
	free(pd);
}

void pd_prefetch_stack(struct perfdata *pd, const uint32_t *off, size_t n)
{
	pd->npf = n < PD_PREFETCH ? n : PD_PREFETCH;
	memcpy(pd->pf, off, pd->npf * sizeof(*off));
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
	int idx = __builtin_popcountll(s->regs_mask & ((1ull << reg) - 1));
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

/* Parse a sample's payload p[0..n). */
static int parse_sample(const struct perfdata *pd, const unsigned char *p,
			uint64_t n, struct pd_sample *s, uint64_t *time)
{
	uint64_t st = pd->sample_type, o = 0;
	memset(s, 0, sizeof(*s));
#define NEED(k)                         \
	do {                            \
		if (!inside(o, (k), n)) \
			return -1;      \
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
			uint64_t k =
			    (uint64_t)__builtin_popcountll(pd->regs_mask);
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
			NEED(sz);
			s->stack = p + o;
			o += sz;
			NEED(8);
			uint64_t dyn = rd64(p + o);
			s->stack_size = dyn < sz ? dyn : sz;
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
static int decode(const struct perfdata *pd, uint64_t off, struct pd_event *e,
		  char *err, size_t errlen)
{
	const unsigned char *r = pd->buf + off;
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
		if (parse_sample(pd, p, n, &e->u.s, &e->time))
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
	snprintf(err, errlen,
		 "perf.data: malformed record (type %u, %u bytes) at offset "
		 "%llu",
		 type, size, (unsigned long long)off);
	return -1;
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
	while (off < end) {
		if (end - off < 8) {
			r = fail(
			    err, errlen,
			    "perf.data truncated: partial record header at "
			    "offset %llu",
			    (unsigned long long)off);
			goto out;
		}
		uint16_t size = rd16(pd->buf + off + 6);
		if (size < 8 || size > end - off) {
			r = fail(err, errlen,
				 "perf.data truncated or corrupt: record of %u "
				 "bytes at offset %llu (data ends at %llu)",
				 size, (unsigned long long)off,
				 (unsigned long long)end);
			goto out;
		}
		uint32_t type = rd32(pd->buf + off);
		uint64_t t = last_t;
		if (type == PERF_RECORD_SAMPLE) {
			if ((pd->sample_type & PERF_SAMPLE_TIME)) {
				uint64_t to = 8;
				to += pd->sample_type & PERF_SAMPLE_IDENTIFIER
					  ? 8
					  : 0;
				to += pd->sample_type & PERF_SAMPLE_IP ? 8 : 0;
				to += pd->sample_type & PERF_SAMPLE_TID ? 8 : 0;
				if (to + 8 <= size)
					t = rd64(pd->buf + off + to);
			}
		} else if (type < 64 && pd->sample_id_all) {
			uint64_t tfe;
			uint64_t tr = id_trailer(pd, &tfe);
			if (tfe && tr + 8 <= size)
				t = rd64(pd->buf + off + size - tfe);
			if (!t)
				t = last_t;
		}
		if (type == PERF_RECORD_SAMPLE || type == PERF_RECORD_MMAP ||
		    type == PERF_RECORD_MMAP2 || type == PERF_RECORD_COMM ||
		    type == PERF_RECORD_FORK || type == PERF_RECORD_EXIT ||
		    type == PERF_RECORD_COMPRESSED_) {
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
			nr++;
		}
		if (t)
			last_t = t;
		off += size;
	}
	if (!sorted && (r = rec_sort(rs, nr)))
		goto out;
	/* pass 2: decode in time order, the records a few ahead prefetched
	 * (their pages are mapped by now: pass 1 touched every one) */
	for (size_t i = 0; i < nr; i++) {
		if (i + PD_AHEAD < nr) {
			const unsigned char *q = pd->buf + rs[i + PD_AHEAD].off;
			uint16_t qs = rs[i + PD_AHEAD].size;
			__builtin_prefetch(q);
			__builtin_prefetch(q + 64);
			__builtin_prefetch(q + 128);
			__builtin_prefetch(q + 192);
			__builtin_prefetch(q + qs - 8);
		}
		if (pd->npf && i + PD_AHEAD / 2 < nr) {
			const struct rec *h = &rs[i + PD_AHEAD / 2];
			const unsigned char *q = pd->buf + h->off;
			struct pd_sample hs;
			uint64_t ht;
			if (rd32(q) == PERF_RECORD_SAMPLE &&
			    !parse_sample(pd, q + 8, h->size - 8u, &hs, &ht) &&
			    hs.stack)
				for (size_t k = 0; k < pd->npf; k++)
					if (pd->pf[k] < hs.stack_size)
						__builtin_prefetch(hs.stack +
								   pd->pf[k]);
		}
		struct pd_event e;
		int d = decode(pd, rs[i].off, &e, err, errlen);
		if (d < 0) {
			r = -EBADMSG;
			goto out;
		}
		if (d == 0)
			continue;
		if (!e.time)
			e.time = rs[i].time;
		r = cb(&e, ctx);
		if (r)
			goto out;
	}
out:
	free(rs);
	return r;
}
