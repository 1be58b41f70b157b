/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the reader of RaptorJIT's auditlog (audit/rjlog.c,
 * audit/rjdwarf.c): the input is a whole log. Seeds: tests/corpus/fuzz_rjlog
 * (synthetic logs written by tests/rjlog_seeds.py, one with a small DWARF
 * blob compiled for the purpose; no byte of a real RaptorJIT log).
 *
 * Oracles, besides "no crash, no sanitizer report, no leak": a refused log
 * gives a message and no handle; an opened one has a damage message of the
 * shape "damaged at byte N: <why>; K records decoded" with N inside the
 * input and K the number of records rj_log_foreach sees, or none; every
 * trace has its raw GCtrace, its machine code readable for szmcode bytes,
 * and the answers of every other call are read.
 */
#include "rjlog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int count(const struct rj_record *r, void *arg)
{
	size_t *n = arg;
	volatile uint8_t sink = 0;
	if (r->len)
		sink = r->data[r->len - 1];
	(void)sink;
	if (strcmp(r->kind, "memory") && strcmp(r->kind, "blob") &&
	    strcmp(r->kind, "event"))
		abort();
	(*n)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rj_log *log = NULL;
	char msg[256] = "";
	(void)rj_log_sniff(data, size);
	int rc = rj_log_open_mem(&log, data, size, msg, sizeof(msg));
	if (rc) {
		if (log || !msg[0])
			abort();
		return 0;
	}
	if (!log)
		abort();
	size_t n = 0;
	rj_log_foreach(log, count, &n);
	const char *d = rj_log_damage(log);
	if (d) {
		unsigned long long at, k;
		const char *semi = strrchr(d, ';');
		if (sscanf(d, "damaged at byte %llu: ", &at) != 1 ||
		    at >= size || !semi ||
		    sscanf(semi, "; %llu records decoded", &k) != 1 || k != n)
			abort();
	}
	if (!n)
		abort();
	volatile uint64_t sink = 0;
	for (size_t i = 0; i < rj_log_ntraces(log); i++) {
		const struct rj_trace *t = rj_log_trace(log, i);
		uint32_t gsz = rj_log_type_size(log, "GCtrace");
		if (!t->raw || !gsz)
			abort();
		sink += t->raw[gsz - 1];
		if (t->mc)
			for (uint32_t k = 0; k < t->szmcode; k++)
				sink += t->mc[k];
		if (t->born_ns < t->dead_ns &&
		    !rj_log_trace_at(log, t->jit_state, t->traceno, t->born_ns))
			abort();
		uint64_t v;
		if (rj_log_event_u64(log, t->record_offset, "GCtrace", &v) ||
		    v != t->gctrace)
			abort();
		const uint8_t *m =
		    rj_log_memory(log, t->mcode, 1, NULL, SIZE_MAX);
		if (m)
			sink += *m;
	}
	for (size_t i = 0; i < rj_log_nflushes(log); i++)
		sink += rj_log_flush(log, i)->nanotime;
	static const char *const macros[] = {"CFRAME_SIZE", "CFRAME_SIZE_JIT",
					     "TWICE", "IRDEF", "UINT64_MAX"};
	for (size_t i = 0; i < sizeof(macros) / sizeof(macros[0]); i++) {
		int64_t v;
		const char *t = rj_log_macro(log, macros[i]);
		if (t)
			sink += strlen(t);
		if (!rj_log_macro_int(log, macros[i], &v))
			sink += (uint64_t)v;
	}
	uint32_t off, sz;
	if (!rj_log_field(log, "jit_State", "cur", &off, &sz))
		sink += off + sz;
	if (!rj_log_field(log, "GCtrace", "u", &off, &sz))
		sink += off + sz;
	(void)sink;
	rj_log_close(log);
	return 0;
}
