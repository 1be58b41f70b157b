/* SPDX-License-Identifier: MIT */
/*
 * jitdump writer (Linux tools/perf/Documentation/jitdump-specification.txt):
 * header, then per piece of code DEBUG_INFO, UNWINDING_INFO and CODE_LOAD,
 * which perf attaches to that CODE_LOAD. The .eh_frame comes from the same
 * rows as the region (perfmap/ehframe.c).
 */
#include "jitdump.h"
#include "ehframe.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define JD_MAGIC 0x4A695444
enum { JD_CODE_LOAD = 0, JD_DEBUG_INFO = 2, JD_UNWINDING_INFO = 4 };

struct jd_writer {
	pthread_mutex_t mu;
	int fd;
	void *marker;
	long page;
	uint64_t index;
	uint32_t pid, tid; /* of the code's process: getpid(), or jd_open_as' */
	char path[4096];
};

struct jbuf {
	uint8_t *p;
	size_t n, cap;
	int oom;
};

static void jput(struct jbuf *b, const void *src, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		while (cap < b->n + n)
			cap *= 2;
		uint8_t *p = realloc(b->p, cap);
		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, src, n);
	b->n += n;
}
static void j32(struct jbuf *b, uint32_t v)
{
	jput(b, &v, 4);
}
static void j64(struct jbuf *b, uint64_t v)
{
	jput(b, &v, 8);
}
static void jpad8(struct jbuf *b)
{
	static const uint8_t z[8];
	jput(b, z, (8 - b->n % 8) % 8);
}
/* Patch a record's total_size (u32 at offset 4 of its header). */
static void jclose(struct jbuf *b, size_t rec)
{
	if (!b->oom) {
		uint32_t sz = (uint32_t)(b->n - rec);
		memcpy(b->p + rec + 4, &sz, 4);
	}
}

static int write_all(int fd, const void *p, size_t n)
{
	const uint8_t *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

static int jd_create(struct jd_writer **out, const char *dir, uint32_t pid,
		     uint64_t ts, int marker)
{
	struct jd_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	pthread_mutex_init(&w->mu, NULL);
	w->pid = pid;
	w->tid = marker ? (uint32_t)syscall(SYS_gettid) : pid;
	snprintf(w->path, sizeof(w->path), "%s/jit-%u.dump", dir ? dir : ".",
		 pid);
	w->fd = open(w->path,
		     O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (w->fd < 0) {
		int e = -errno;
		free(w);
		return e;
	}
	/* perf finds the dump through this mapping's MMAP record. */
	w->page = sysconf(_SC_PAGESIZE);
	w->marker = marker ? mmap(NULL, (size_t)w->page, PROT_READ | PROT_EXEC,
				  MAP_PRIVATE, w->fd, 0)
			   : NULL;
	if (w->marker == MAP_FAILED) {
		int e = -errno;
		close(w->fd);
		unlink(w->path);
		free(w);
		return e;
	}
	struct jbuf b = {0};
	j32(&b, JD_MAGIC);
	j32(&b, 1);  /* version */
	j32(&b, 40); /* header size */
	j32(&b, EM_X86_64);
	j32(&b, 0);
	j32(&b, pid);
	j64(&b, ts);
	j64(&b, 0); /* flags */
	int err = b.oom ? -ENOMEM : write_all(w->fd, b.p, b.n);
	free(b.p);
	if (err) {
		jd_close(w);
		return err;
	}
	*out = w;
	return 0;
}

int jd_open(struct jd_writer **out, const char *dir)
{
	return jd_create(out, dir, (uint32_t)getpid(), jsf_now_ns(), 1);
}

int jd_open_as(struct jd_writer **out, const char *dir, uint32_t pid,
	       uint64_t ts)
{
	return jd_create(out, dir, pid, ts, 0);
}

/*
 * Where the unwind data goes. perf inject writes one ELF per CODE_LOAD with
 * the code, then .eh_frame at ALIGN8(code_size), then .eh_frame_hdr, and
 * maps `ALIGN8(code_size) + mapped_size` bytes from code_addr; libunwind
 * reads the unwind data through that mapping, and where mappings overlap
 * the newest wins. LuaJIT packs each new trace right below the previous
 * one, so unwind data placed after a trace lies on the older code above.
 *
 * A trace larger than its unwind data (U bytes) keeps it inside: the code
 * is declared shorter (a multiple of 8) and the unwind data follows, with
 * mapped_size stretched so that the mapping ends exactly at the trace's
 * end. perf's symbol covers the declared code only: the last bytes are
 * unwound right but named by address (jitsframe's folding), not by perf.
 *
 * A smaller trace cannot: below it, the next (newer) trace would override
 * its unwind data. It is declared whole and its unwind data goes above it,
 * over the first bytes of older code, for which it then carries FDEs too
 * (that code's rows, clipped), so that samples there still unwind. If that
 * range reaches another load's unwind data, the mapping is stretched to the
 * end of that load and carries FDEs for everything it covers.
 */
static uint32_t clip(const struct jd_code_info *ci, uint64_t lo, uint64_t hi,
		     struct jd_unwind_fn *fn, struct jsf_row *rb)
{
	uint64_t a = ci->start, e = ci->start + ci->size;
	uint64_t ca = a > lo ? a : lo, ce = e < hi ? e : hi;
	if (ca >= ce || ci->nrows > 16)
		return 0;
	uint32_t off = (uint32_t)(ca - a), k = 0;
	for (uint32_t j = 0; j < ci->nrows; j++) {
		if (ci->rows[j].offset <= off) {
			rb[0] = ci->rows[j]; /* the row in force at ca */
			rb[0].offset = 0;
			k = 1;
		} else if (ci->rows[j].offset < off + (ce - ca)) {
			rb[k] = ci->rows[j];
			rb[k++].offset -= off;
		}
	}
	*fn = (struct jd_unwind_fn){ca, (uint32_t)(ce - ca), rb, k};
	return k ? 1 : 0;
}

int jd_code(struct jd_writer *w, uint64_t addr, const void *code, uint32_t size,
	    const char *name, const struct jsf_row *rows, uint32_t nrows,
	    const struct jd_line *lines, uint32_t nlines, uint64_t ts,
	    jd_neighbours_fn nb, void *nbctx, struct jd_placed *placed)
{
	struct jbuf b = {0};
	size_t rec, hdr = 0, ulen = 0;
	uint8_t eh[JSF_EH_MAX(16) * JSF_EH_MAX_FNS];
	uint64_t code_addr = addr, declared = size, mapped = 0, eh_addr = 0;
	struct jd_unwind_fn fns[JSF_EH_MAX_FNS] = {{addr, size, rows, nrows}};
	struct jsf_row rowbuf[JSF_EH_MAX_FNS][16];
	uint32_t nfns = 1;
	if (nrows && nrows <= 16)
		ulen = eh_fns(fns, 1, addr, eh, sizeof(eh), &hdr);
	if (ulen && ulen + 8 <= size) {
		declared = (size - ulen) & ~7ull;
		eh_addr = addr + declared;
		ulen = eh_fns(fns, 1, eh_addr, eh, sizeof(eh), &hdr);
		mapped = addr + size - eh_addr;
	} else if (ulen) {
		eh_addr = addr + ((size + 7) & ~7ull);
		uint64_t hi = eh_addr + ulen;
		struct jd_code_info ci[JSF_EH_MAX_FNS];
		for (int round = 0; round < 8 && ulen; round++) {
			uint32_t n = nb ? nb(addr + size, hi, ci,
					     JSF_EH_MAX_FNS - 1, nbctx)
					: 0;
			uint64_t target = hi;
			nfns = 1;
			for (uint32_t i = 0; i < n; i++) {
				/* never leave another load's unwind data half
				 * covered: take the whole of it */
				if (ci[i].map_hi > ci[i].eh_lo &&
				    hi > ci[i].eh_lo && ci[i].map_hi > target)
					target = ci[i].map_hi;
				nfns += clip(&ci[i], addr + size, hi,
					     &fns[nfns], rowbuf[nfns]);
			}
			ulen = eh_fns(fns, nfns, eh_addr, eh, sizeof(eh), &hdr);
			if (eh_addr + ulen > target)
				target = eh_addr + ulen;
			if (target == hi)
				break;
			hi = target;
			if (round == 7)
				ulen = 0; /* did not settle: no unwind data */
		}
		mapped = hi - eh_addr;
	}
	if (!ulen)
		mapped = eh_addr = 0;
	if (placed)
		*placed = (struct jd_placed){eh_addr, eh_addr + mapped};
	if (nlines) {
		rec = b.n;
		j32(&b, JD_DEBUG_INFO);
		j32(&b, 0);
		j64(&b, ts);
		j64(&b, code_addr);
		j64(&b, nlines);
		for (uint32_t i = 0; i < nlines; i++) {
			j64(&b, lines[i].addr);
			j32(&b, lines[i].line);
			j32(&b, 0); /* discriminator */
			jput(&b, lines[i].file, strlen(lines[i].file) + 1);
		}
		jpad8(&b);
		jclose(&b, rec);
	}
	if (ulen) {
		rec = b.n;
		j32(&b, JD_UNWINDING_INFO);
		j32(&b, 0);
		j64(&b, ts);
		j64(&b, ulen);	 /* unwinding_size: .eh_frame + hdr */
		j64(&b, hdr);	 /* eh_frame_hdr_size */
		j64(&b, mapped); /* mapped_size: to the end of the range */
		jput(&b, eh, ulen);
		jpad8(&b);
		jclose(&b, rec);
	}
	pthread_mutex_lock(&w->mu);
	rec = b.n;
	j32(&b, JD_CODE_LOAD);
	j32(&b, 0);
	j64(&b, ts);
	j32(&b, w->pid);
	j32(&b, w->marker ? (uint32_t)syscall(SYS_gettid) : w->tid);
	j64(&b, code_addr); /* vma */
	j64(&b, code_addr); /* code address */
	j64(&b, declared);
	j64(&b, w->index++);
	jput(&b, name, strlen(name) + 1);
	jput(&b, code, declared); /* declared <= size */
	jclose(&b, rec);
	int err = b.oom ? -ENOMEM : write_all(w->fd, b.p, b.n);
	pthread_mutex_unlock(&w->mu);
	free(b.p);
	return err;
}

const char *jd_path(const struct jd_writer *w)
{
	return w->path;
}

void jd_close(struct jd_writer *w)
{
	if (!w)
		return;
	if (w->marker && w->marker != MAP_FAILED)
		munmap(w->marker, (size_t)w->page);
	close(w->fd);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

/* ---------------------------------------------------------- perf map */

struct pmap {
	FILE *f;
};

int pmap_open(struct pmap **out)
{
	char path[64];
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	/* /tmp is shared: never follow a planted link, never reuse a file. */
	int fd = open(
	    path, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	struct pmap *m = calloc(1, sizeof(*m));
	if (!m || !(m->f = fdopen(fd, "w"))) {
		close(fd);
		free(m);
		return -ENOMEM;
	}
	*out = m;
	return 0;
}

int pmap_add(struct pmap *m, uint64_t addr, uint32_t size, const char *name)
{
	if (fprintf(m->f, "%llx %x %s\n", (unsigned long long)addr, size,
		    name) < 0 ||
	    fflush(m->f))
		return -EIO;
	return 0;
}

void pmap_close(struct pmap *m)
{
	if (!m)
		return;
	fclose(m->f);
	free(m);
}
