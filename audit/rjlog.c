/* SPDX-License-Identifier: MIT */
/*
 * The reader of RaptorJIT's own auditlog (audit/rjlog.h; docs/RAPTORJIT.md
 * "Reader"): the records, the traces and flushes, lifetimes, memory
 * look-ups, events. The embedded DWARF is audit/rjdwarf.c's.
 *
 * The msgpack walker accepts only what lj_auditlog.c writes: a fixmap of
 * 1..15 pairs whose keys are str16 and whose values are str16, uint64 or
 * bin32. Anything else is damage: decoding stops at the record's first
 * byte, which the damage message names.
 */
#include "rjlog.h"
#include "rjdwarf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_MEMORY = 1, K_BLOB, K_EVENT };
static const char *const kind_name[] = {"", "memory", "blob", "event"};

struct rec {
	uint64_t off;
	uint64_t address;  /* memory */
	uint64_t nanotime; /* event */
	const char *name;  /* interned: hint, blob name, event name */
	const uint8_t *data;
	size_t len;
	uint8_t kind;
};

struct rj_log {
	uint8_t *buf;
	size_t len;
	struct rec *recs;
	size_t nrecs;
	size_t *mem; /* indexes of memory records, in log order */
	size_t nmem;
	struct rj_trace *traces;
	size_t ntraces;
	struct rj_flush *flushes;
	size_t nflushes;
	struct rjd *dw;
	char **names; /* intern table (open addressing) */
	size_t capnames, nnames;
	int damaged;
	char damage[256];
	/* memo of rj_log_field answers */
	struct memo {
		char *type, *member;
		int rc;
		uint32_t off, size;
	} * memo;
	size_t nmemo, capmemo;
};

/* --- the msgpack walker --- */

enum { V_STR = 0xda, V_U64 = 0xcf, V_BIN = 0xc6 };

struct kv {
	const uint8_t *key;
	size_t keylen;
	uint8_t vt;
	uint64_t u;	  /* V_U64 */
	const uint8_t *p; /* V_STR, V_BIN */
	size_t n;
};

static uint64_t be(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* Parse the record at `at`: its pairs into kv[], its end into *next.
 * The number of pairs, or -1 with *why. */
static int walk(const uint8_t *buf, size_t len, size_t at, struct kv kv[15],
		size_t *next, const char **why)
{
	size_t p = at;
	uint8_t b = buf[p++];
	if ((b & 0xf0) != 0x80 || !(b & 0x0f)) {
		*why = "not a msgpack fixmap of 1..15 pairs";
		return -1;
	}
	int n = b & 0x0f;
	for (int i = 0; i < n; i++) {
		if (len - p < 3) {
			*why = "truncated record";
			return -1;
		}
		if (buf[p] != V_STR) {
			*why = "a key that is not a str16";
			return -1;
		}
		size_t kl = (size_t)be(buf + p + 1, 2);
		p += 3;
		if (len - p < kl + 1) {
			*why = "truncated record";
			return -1;
		}
		kv[i].key = buf + p;
		kv[i].keylen = kl;
		p += kl;
		uint8_t t = buf[p++];
		kv[i].vt = t;
		unsigned hl = t == V_STR   ? 2
			      : t == V_U64 ? 8
			      : t == V_BIN ? 4
					   : 0;
		if (!hl) {
			*why = "a value that is not str16, uint64 or bin32";
			return -1;
		}
		if (len - p < hl) {
			*why = "truncated record";
			return -1;
		}
		uint64_t v = be(buf + p, hl);
		p += hl;
		if (t == V_U64) {
			kv[i].u = v;
			kv[i].p = NULL;
			kv[i].n = 0;
			continue;
		}
		if (v > len - p) {
			*why = "truncated record";
			return -1;
		}
		kv[i].p = buf + p;
		kv[i].n = (size_t)v;
		p += (size_t)v;
	}
	*next = p;
	return n;
}

static int key_is(const struct kv *kv, const char *k)
{
	size_t n = strlen(k);
	return kv->keylen == n && !memcmp(kv->key, k, n);
}

static int val_is(const struct kv *kv, const char *s)
{
	size_t n = strlen(s);
	return kv->vt == V_STR && kv->n == n && !memcmp(kv->p, s, n);
}

/* --- interned names --- */

static uint64_t fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static const char *intern(struct rj_log *log, const uint8_t *p, size_t n)
{
	if (2 * (log->nnames + 1) > log->capnames) {
		size_t cap = log->capnames ? 2 * log->capnames : 64;
		char **t = calloc(cap, sizeof(*t));
		if (!t)
			return NULL;
		for (size_t i = 0; i < log->capnames; i++) {
			char *s = log->names[i];
			if (!s)
				continue;
			size_t j =
			    fnv((const uint8_t *)s, strlen(s)) & (cap - 1);
			while (t[j])
				j = (j + 1) & (cap - 1);
			t[j] = s;
		}
		free(log->names);
		log->names = t;
		log->capnames = cap;
	}
	/* a name ends at a NUL inside it, if any */
	const uint8_t *z = memchr(p, 0, n);
	if (z)
		n = (size_t)(z - p);
	size_t j = fnv(p, n) & (log->capnames - 1);
	for (; log->names[j]; j = (j + 1) & (log->capnames - 1)) {
		const char *s = log->names[j];
		if (strlen(s) == n && !memcmp(s, p, n))
			return s;
	}
	char *s = malloc(n + 1);
	if (!s)
		return NULL;
	memcpy(s, p, n);
	s[n] = 0;
	log->names[j] = s;
	log->nnames++;
	return s;
}

/* --- decoding --- */

static void set_damage(struct rj_log *log, size_t at, const char *why)
{
	log->damaged = 1;
	snprintf(log->damage, sizeof(log->damage),
		 "damaged at byte %zu: %s; %zu records decoded", at, why,
		 log->nrecs);
}

/* Decode every record up to the end or the first damage. -ENOMEM only. */
static int decode(struct rj_log *log)
{
	size_t cap = 0, capmem = 0, at = 0;
	while (at < log->len) {
		struct kv kv[15];
		size_t next;
		const char *why = NULL;
		int n = walk(log->buf, log->len, at, kv, &next, &why);
		if (n < 0) {
			set_damage(log, at, why);
			return 0;
		}
		struct rec r = {.off = at};
		const struct kv *type = NULL, *name = NULL, *data = NULL;
		const struct kv *addr = NULL, *ns = NULL;
		for (int i = 0; i < n; i++) {
			const struct kv *k = &kv[i];
			if (key_is(k, "type"))
				type = k;
			else if (key_is(k, "hint") || key_is(k, "name") ||
				 key_is(k, "event"))
				name = k->vt == V_STR ? k : name;
			else if (key_is(k, "data"))
				data = k;
			else if (key_is(k, "address"))
				addr = k;
			else if (key_is(k, "nanotime"))
				ns = k;
		}
		if (!type || type->vt != V_STR) {
			set_damage(log, at, "a record without a type");
			return 0;
		}
		if (val_is(type, "memory")) {
			r.kind = K_MEMORY;
			if (!name || !addr || addr->vt != V_U64 || !data ||
			    data->vt != V_BIN) {
				set_damage(log, at,
					   "a memory record without hint, "
					   "address or data");
				return 0;
			}
			if (data->n > UINT64_MAX - addr->u) {
				set_damage(log, at,
					   "a memory record that wraps the "
					   "address space");
				return 0;
			}
			r.address = addr->u;
		} else if (val_is(type, "blob")) {
			r.kind = K_BLOB;
			if (!name || !data || data->vt != V_BIN) {
				set_damage(
				    log, at,
				    "a blob record without name or data");
				return 0;
			}
		} else if (val_is(type, "event")) {
			r.kind = K_EVENT;
			if (!name || !ns || ns->vt != V_U64) {
				set_damage(log, at,
					   "an event record without event or "
					   "nanotime");
				return 0;
			}
			r.nanotime = ns->u;
		} else {
			set_damage(log, at, "an unknown record type");
			return 0;
		}
		if (data) {
			r.data = data->p;
			r.len = data->n;
		}
		r.name = intern(log, name->p, name->n);
		if (!r.name)
			return -ENOMEM;
		if (log->nrecs == cap) {
			cap = cap ? 2 * cap : 1024;
			void *t = realloc(log->recs, cap * sizeof(*log->recs));
			if (!t)
				return -ENOMEM;
			log->recs = t;
		}
		if (r.kind == K_MEMORY) {
			if (log->nmem == capmem) {
				capmem = capmem ? 2 * capmem : 1024;
				void *t = realloc(log->mem,
						  capmem * sizeof(*log->mem));
				if (!t)
					return -ENOMEM;
				log->mem = t;
			}
			log->mem[log->nmem++] = log->nrecs;
		}
		log->recs[log->nrecs++] = r;
		at = next;
	}
	return 0;
}

/* The record index whose offset is `off`, or SIZE_MAX. */
static size_t rec_at(const struct rj_log *log, uint64_t off)
{
	size_t lo = 0, hi = log->nrecs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (log->recs[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < log->nrecs && log->recs[lo].off == off ? lo : SIZE_MAX;
}

int rj_log_event_u64(const struct rj_log *log, uint64_t offset, const char *key,
		     uint64_t *val)
{
	if (!log)
		return -ENOENT;
	size_t i = rec_at(log, offset);
	if (i == SIZE_MAX || log->recs[i].kind != K_EVENT)
		return -ENOENT;
	struct kv kv[15];
	size_t next;
	const char *why;
	int n = walk(log->buf, log->len, (size_t)offset, kv, &next, &why);
	for (int k = 0; k < n; k++)
		if (key_is(&kv[k], key) && kv[k].vt == V_U64) {
			*val = kv[k].u;
			return 0;
		}
	return -ENOENT;
}

static int refuse(char *msg, size_t msglen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(char *msg, size_t msglen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (msg && msglen)
		vsnprintf(msg, msglen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* GCtrace members the reader decodes: each must be in the DWARF. */
static const char *const gct_fields[] = {
    "mcode", "szmcode", "mcloop", "spadjust", "traceno", "parent",
    "root",  "link",	"exitno", "linktype", NULL};

static int get_u32(struct rj_log *log, const uint8_t *raw, size_t len,
		   const char *f, uint32_t *out)
{
	uint64_t v;
	int rc = rj_log_get(log, "GCtrace", f, raw, len, &v);
	if (rc)
		return rc;
	if (v > UINT32_MAX)
		return -ERANGE;
	*out = (uint32_t)v;
	return 0;
}

/* Check the DWARF and the struct sizes, then build traces and flushes. */
static int build(struct rj_log *log, char *msg, size_t msglen)
{
	size_t nstops = 0, nflush = 0;
	const struct rec *dwo = NULL;
	for (size_t i = 0; i < log->nrecs; i++) {
		const struct rec *r = &log->recs[i];
		if (r->kind == K_BLOB && !dwo &&
		    !strcmp(r->name, "lj_dwarf.dwo"))
			dwo = r;
		if (r->kind == K_EVENT && !strcmp(r->name, "trace_stop"))
			nstops++;
		if (r->kind == K_EVENT && !strcmp(r->name, "trace_flushall"))
			nflush++;
	}
	if (dwo) {
		char m[200];
		int rc = rjd_open(&log->dw, dwo->data, dwo->len, m, sizeof(m));
		if (rc)
			return rc == -ENOMEM ? rc
					     : refuse(msg, msglen, "%s", m);
	}
	uint32_t gsz = 0, jsz = 0;
	if (log->dw) {
		gsz = rj_log_type_size(log, "GCtrace");
		jsz = rj_log_type_size(log, "jit_State");
		if (!gsz || !jsz)
			return refuse(msg, msglen,
				      "the log's DWARF has no %s type: not a "
				      "log this reader can trust",
				      gsz ? "jit_State" : "GCtrace");
		for (const char *const *f = gct_fields; *f; f++) {
			uint32_t off, size;
			if (rj_log_field(log, "GCtrace", *f, &off, &size) ||
			    (size != 1 && size != 2 && size != 4 && size != 8))
				return refuse(msg, msglen,
					      "the log's DWARF has no usable "
					      "GCtrace.%s: not a log this "
					      "reader can trust",
					      *f);
		}
	} else if (nstops) {
		return refuse(msg, msglen,
			      "the log has traces but no lj_dwarf.dwo blob to "
			      "decode them");
	}
	for (size_t k = 0; k < log->nmem && log->dw; k++) {
		const struct rec *r = &log->recs[log->mem[k]];
		uint32_t want = !strcmp(r->name, "GCtrace")	? gsz
				: !strcmp(r->name, "jit_State") ? jsz
								: 0;
		if (want && r->len != want)
			return refuse(msg, msglen,
				      "the %s memory record at byte %llu is "
				      "%zu bytes but the log's DWARF says %s "
				      "is %u: not a log this reader can trust",
				      r->name, (unsigned long long)r->off,
				      r->len, r->name, want);
	}
	log->traces = calloc(nstops ? nstops : 1, sizeof(*log->traces));
	log->flushes = calloc(nflush ? nflush : 1, sizeof(*log->flushes));
	if (!log->traces || !log->flushes)
		return -ENOMEM;
	uint64_t evi = 0;
	for (size_t i = 0; i < log->nrecs; i++) {
		const struct rec *r = &log->recs[i];
		if (r->kind != K_EVENT)
			continue;
		uint64_t idx = evi++;
		int stop = !strcmp(r->name, "trace_stop");
		int flush = !strcmp(r->name, "trace_flushall");
		if (!stop && !flush)
			continue;
		uint64_t js = 0, gct = 0;
		if (rj_log_event_u64(log, r->off, "jit_State", &js))
			return refuse(msg, msglen,
				      "the %s event at byte %llu has no "
				      "jit_State",
				      r->name, (unsigned long long)r->off);
		if (flush) {
			log->flushes[log->nflushes++] = (struct rj_flush){
			    .event_index = idx,
			    .record_offset = r->off,
			    .nanotime = r->nanotime,
			    .jit_state = js,
			};
			continue;
		}
		if (rj_log_event_u64(log, r->off, "GCtrace", &gct))
			return refuse(msg, msglen,
				      "the trace_stop event at byte %llu has "
				      "no GCtrace",
				      (unsigned long long)r->off);
		const uint8_t *raw =
		    rj_log_memory(log, gct, gsz, "GCtrace", (size_t)r->off);
		if (!raw)
			return refuse(msg, msglen,
				      "the trace_stop event at byte %llu has "
				      "no GCtrace memory record before it",
				      (unsigned long long)r->off);
		struct rj_trace *t = &log->traces[log->ntraces];
		*t = (struct rj_trace){
		    .event_index = idx,
		    .record_offset = r->off,
		    .born_ns = r->nanotime,
		    .dead_ns = RJ_NEVER,
		    .jit_state = js,
		    .gctrace = gct,
		    .raw = raw,
		};
		uint64_t mc = 0;
		int rc = rj_log_get(log, "GCtrace", "mcode", raw, gsz, &mc);
		rc = rc ? rc : get_u32(log, raw, gsz, "szmcode", &t->szmcode);
		rc = rc ? rc : get_u32(log, raw, gsz, "mcloop", &t->mcloop);
		rc = rc ? rc : get_u32(log, raw, gsz, "spadjust", &t->spadjust);
		rc = rc ? rc : get_u32(log, raw, gsz, "traceno", &t->traceno);
		rc = rc ? rc : get_u32(log, raw, gsz, "parent", &t->parent);
		rc = rc ? rc : get_u32(log, raw, gsz, "root", &t->root);
		rc = rc ? rc : get_u32(log, raw, gsz, "link", &t->link);
		rc = rc ? rc : get_u32(log, raw, gsz, "exitno", &t->exitno);
		rc = rc ? rc : get_u32(log, raw, gsz, "linktype", &t->linktype);
		if (rc)
			return refuse(msg, msglen,
				      "the GCtrace of the trace_stop at byte "
				      "%llu does not decode",
				      (unsigned long long)r->off);
		t->mcode = mc;
		if (t->szmcode)
			t->mc = rj_log_memory(log, mc, t->szmcode, "MCode[]",
					      (size_t)r->off);
		log->ntraces++;
	}
	/* lifetimes: the next flushall of the same jit_State */
	for (size_t i = 0; i < log->ntraces; i++) {
		struct rj_trace *t = &log->traces[i];
		for (size_t f = 0; f < log->nflushes; f++)
			if (log->flushes[f].record_offset > t->record_offset &&
			    log->flushes[f].jit_state == t->jit_state) {
				t->dead_ns = log->flushes[f].nanotime;
				break;
			}
	}
	return 0;
}

int rj_log_open_mem(struct rj_log **out, const void *buf, size_t len, char *msg,
		    size_t msglen)
{
	*out = NULL;
	if (msg && msglen)
		msg[0] = 0;
	if (!len)
		return refuse(msg, msglen,
			      "not a RaptorJIT auditlog: empty file");
	struct rj_log *log = calloc(1, sizeof(*log));
	if (!log || !(log->buf = malloc(len))) {
		free(log);
		return -ENOMEM;
	}
	memcpy(log->buf, buf, len);
	log->len = len;
	int rc = decode(log);
	if (!rc && !log->nrecs)
		rc = refuse(msg, msglen, "not a RaptorJIT auditlog: %s",
			    log->damage);
	if (!rc)
		rc = build(log, msg, msglen);
	if (rc) {
		if (rc == -ENOMEM && msg && msglen)
			snprintf(msg, msglen, "out of memory");
		rj_log_close(log);
		return rc;
	}
	*out = log;
	return 0;
}

int rj_log_open(struct rj_log **out, const char *path, char *msg, size_t msglen)
{
	*out = NULL;
	FILE *f = fopen(path, "rb");
	if (!f) {
		int e = errno;
		if (msg && msglen)
			snprintf(msg, msglen, "%s: %s", path, strerror(e));
		return -e;
	}
	size_t cap = 1 << 16, n = 0;
	uint8_t *b = malloc(cap);
	for (;;) {
		if (!b) {
			fclose(f);
			return -ENOMEM;
		}
		n += fread(b + n, 1, cap - n, f);
		if (n < cap)
			break;
		uint8_t *nb = cap > SIZE_MAX / 2 ? NULL : realloc(b, cap * 2);
		if (!nb)
			free(b);
		b = nb;
		cap *= 2;
	}
	int err = ferror(f);
	fclose(f);
	if (err) {
		free(b);
		if (msg && msglen)
			snprintf(msg, msglen, "%s: read error", path);
		return -EIO;
	}
	char m[256] = "";
	int rc = rj_log_open_mem(out, b, n, m, sizeof(m));
	free(b);
	if (rc && msg && msglen)
		snprintf(msg, msglen, "%s: %s", path, m);
	return rc;
}

void rj_log_close(struct rj_log *log)
{
	if (!log)
		return;
	for (size_t i = 0; i < log->capnames; i++)
		free(log->names[i]);
	for (size_t i = 0; i < log->nmemo; i++) {
		free(log->memo[i].type);
		free(log->memo[i].member);
	}
	free(log->memo);
	free(log->names);
	rjd_close(log->dw);
	free(log->traces);
	free(log->flushes);
	free(log->mem);
	free(log->recs);
	free(log->buf);
	free(log);
}

const char *rj_log_damage(const struct rj_log *log)
{
	return log && log->damaged ? log->damage : NULL;
}

size_t rj_log_ntraces(const struct rj_log *log)
{
	return log ? log->ntraces : 0;
}

const struct rj_trace *rj_log_trace(const struct rj_log *log, size_t i)
{
	return log && i < log->ntraces ? &log->traces[i] : NULL;
}

size_t rj_log_nflushes(const struct rj_log *log)
{
	return log ? log->nflushes : 0;
}

const struct rj_flush *rj_log_flush(const struct rj_log *log, size_t i)
{
	return log && i < log->nflushes ? &log->flushes[i] : NULL;
}

const struct rj_trace *rj_log_trace_at(const struct rj_log *log,
				       uint64_t jit_state, uint32_t traceno,
				       uint64_t ns)
{
	if (!log)
		return NULL;
	for (size_t i = log->ntraces; i-- > 0;) {
		const struct rj_trace *t = &log->traces[i];
		if (t->jit_state == jit_state && t->traceno == traceno &&
		    t->born_ns <= ns && ns < t->dead_ns)
			return t;
	}
	return NULL;
}

/* --- DWARF --- */

uint32_t rj_log_type_size(const struct rj_log *log, const char *type)
{
	return log && type ? rjd_type_size(log->dw, type) : 0;
}

int rj_log_field(const struct rj_log *clog, const char *type,
		 const char *member, uint32_t *off, uint32_t *size)
{
	if (!clog || !type || !member || !clog->dw)
		return -ENOENT;
	struct rj_log *log = (struct rj_log *)clog; /* the memo only */
	for (size_t i = 0; i < log->nmemo; i++) {
		struct memo *m = &log->memo[i];
		if (!strcmp(m->type, type) && !strcmp(m->member, member)) {
			if (!m->rc) {
				*off = m->off;
				*size = m->size;
			}
			return m->rc;
		}
	}
	uint32_t o = 0, s = 0;
	int rc = rjd_field(log->dw, type, member, &o, &s);
	if (log->nmemo < 512) {
		if (log->nmemo == log->capmemo) {
			size_t cap = log->capmemo ? 2 * log->capmemo : 32;
			void *t = realloc(log->memo, cap * sizeof(*log->memo));
			if (t) {
				log->memo = t;
				log->capmemo = cap;
			}
		}
		if (log->nmemo < log->capmemo) {
			char *a = strdup(type), *b = strdup(member);
			if (a && b)
				log->memo[log->nmemo++] =
				    (struct memo){a, b, rc, o, s};
			else {
				free(a);
				free(b);
			}
		}
	}
	if (!rc) {
		*off = o;
		*size = s;
	}
	return rc;
}

int rj_log_get(const struct rj_log *log, const char *type, const char *member,
	       const uint8_t *raw, size_t rawlen, uint64_t *val)
{
	uint32_t off, size;
	int rc = rj_log_field(log, type, member, &off, &size);
	if (rc)
		return rc;
	if (size != 1 && size != 2 && size != 4 && size != 8)
		return -ERANGE;
	if (!raw || off > rawlen || size > rawlen - off)
		return -ERANGE;
	uint64_t v = 0;
	for (uint32_t i = 0; i < size; i++)
		v |= (uint64_t)raw[off + i] << (8 * i);
	*val = v;
	return 0;
}

const char *rj_log_macro(const struct rj_log *log, const char *name)
{
	return log && name ? rjd_macro(log->dw, name) : NULL;
}

/* Integer expressions: + - * / ( ), integer literals, other macros. */
struct ev {
	const struct rj_log *log;
	const char *p;
	int depth;
	int err;
};

static int64_t ev_expr(struct ev *e);

static void ev_ws(struct ev *e)
{
	while (*e->p == ' ' || *e->p == '\t')
		e->p++;
}

static int is_id(char c, int first)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (!first && c >= '0' && c <= '9');
}

static int64_t ev_macro(const struct rj_log *log, const char *name, int depth,
			int *err)
{
	const char *body = rj_log_macro(log, name);
	if (!body) {
		*err = -ENOENT;
		return 0;
	}
	if (depth > 16 || strlen(body) > 4096) {
		*err = -EINVAL;
		return 0;
	}
	struct ev e = {log, body, depth + 1, 0};
	int64_t v = ev_expr(&e);
	ev_ws(&e);
	if (!e.err && *e.p)
		e.err = -EINVAL;
	*err = e.err;
	return v;
}

static int64_t ev_primary(struct ev *e)
{
	ev_ws(e);
	char c = *e->p;
	if (c == '(') {
		e->p++;
		int64_t v = ev_expr(e);
		ev_ws(e);
		if (*e->p != ')') {
			e->err = -EINVAL;
			return 0;
		}
		e->p++;
		return v;
	}
	if (c == '-' || c == '+') {
		e->p++;
		int64_t v = ev_primary(e);
		if (c == '-') {
			if (v == INT64_MIN) {
				e->err = -EINVAL;
				return 0;
			}
			v = -v;
		}
		return v;
	}
	if (c >= '0' && c <= '9') {
		int base = 10;
		if (c == '0' && (e->p[1] == 'x' || e->p[1] == 'X')) {
			base = 16;
			e->p += 2;
		} else if (c == '0') {
			base = 8;
		}
		uint64_t v = 0;
		int digits = 0;
		for (;; e->p++, digits++) {
			char d = *e->p;
			int x = d >= '0' && d <= '9'   ? d - '0'
				: d >= 'a' && d <= 'f' ? d - 'a' + 10
				: d >= 'A' && d <= 'F' ? d - 'A' + 10
						       : 99;
			if (x >= base)
				break;
			if (v > (UINT64_MAX - (uint64_t)x) / (uint64_t)base) {
				e->err = -EINVAL;
				return 0;
			}
			v = v * (uint64_t)base + (uint64_t)x;
		}
		if (base == 16 && !digits) {
			e->err = -EINVAL;
			return 0;
		}
		while (*e->p == 'u' || *e->p == 'U' || *e->p == 'l' ||
		       *e->p == 'L')
			e->p++;
		if (is_id(*e->p, 0) || v > INT64_MAX) {
			e->err = -EINVAL;
			return 0;
		}
		return (int64_t)v;
	}
	if (is_id(c, 1)) {
		char name[128];
		size_t n = 0;
		while (is_id(*e->p, 0)) {
			if (n + 1 >= sizeof(name)) {
				e->err = -EINVAL;
				return 0;
			}
			name[n++] = *e->p++;
		}
		name[n] = 0;
		int err = 0;
		int64_t v = ev_macro(e->log, name, e->depth, &err);
		if (err)
			e->err = err == -ENOENT ? -EINVAL : err;
		return v;
	}
	e->err = -EINVAL;
	return 0;
}

static int64_t ev_term(struct ev *e)
{
	int64_t v = ev_primary(e);
	for (;;) {
		if (e->err)
			return 0;
		ev_ws(e);
		char op = *e->p;
		if (op != '*' && op != '/')
			return v;
		e->p++;
		int64_t w = ev_primary(e);
		if (e->err)
			return 0;
		if (op == '*') {
			if (__builtin_mul_overflow(v, w, &v))
				e->err = -EINVAL;
		} else if (w == 0 || (v == INT64_MIN && w == -1)) {
			e->err = -EINVAL;
		} else {
			v /= w;
		}
	}
}

static int64_t ev_expr(struct ev *e)
{
	int64_t v = ev_term(e);
	for (;;) {
		if (e->err)
			return 0;
		ev_ws(e);
		char op = *e->p;
		if (op != '+' && op != '-')
			return v;
		e->p++;
		int64_t w = ev_term(e);
		if (e->err)
			return 0;
		if (op == '+' ? __builtin_add_overflow(v, w, &v)
			      : __builtin_sub_overflow(v, w, &v))
			e->err = -EINVAL;
	}
}

int rj_log_macro_int(const struct rj_log *log, const char *name, int64_t *val)
{
	if (!rj_log_macro(log, name))
		return -ENOENT;
	int err = 0;
	int64_t v = ev_macro(log, name, 0, &err);
	if (err)
		return err == -ENOENT ? -EINVAL : err;
	*val = v;
	return 0;
}

/* --- raw records --- */

const uint8_t *rj_log_memory(const struct rj_log *log, uint64_t addr,
			     size_t len, const char *hint, size_t before)
{
	if (!log)
		return NULL;
	for (size_t k = log->nmem; k-- > 0;) {
		const struct rec *r = &log->recs[log->mem[k]];
		if (r->off > before)
			continue;
		if (addr < r->address || addr - r->address > r->len ||
		    len > r->len - (addr - r->address))
			continue;
		if (hint && strcmp(hint, r->name))
			continue;
		return r->data + (addr - r->address);
	}
	return NULL;
}

int rj_log_foreach(const struct rj_log *log,
		   int (*fn)(const struct rj_record *rec, void *arg), void *arg)
{
	if (!log)
		return 0;
	for (size_t i = 0; i < log->nrecs; i++) {
		const struct rec *r = &log->recs[i];
		struct rj_record x = {
		    .offset = r->off,
		    .kind = kind_name[r->kind],
		    .name = r->name,
		    .address = r->address,
		    .nanotime = r->nanotime,
		    .data = r->data,
		    .len = r->len,
		};
		int rc = fn(&x, arg);
		if (rc)
			return rc;
	}
	return 0;
}

int rj_log_sniff(const void *buf, size_t len)
{
	const uint8_t *b = buf;
	return buf && len >= 8 && (b[0] & 0xf0) == 0x80 && (b[0] & 0x0f) &&
	       b[1] == V_STR && b[2] == 0 && b[3] == 4 &&
	       !memcmp(b + 4, "type", 4);
}
