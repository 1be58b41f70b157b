/* SPDX-License-Identifier: MIT */
/*
 * RaptorJIT in the CLI (docs/RAPTORJIT.md "Recording RaptorJIT"): knowing
 * its program, finding its process in a perf.data, and making a region
 * from its own auditlog (audit/rjlog.h) once the log's frame size agrees
 * with the binary's own unwind information (unwind/).
 */
#include "auditlog.h"
#include "cli.h"
#include "jitdump.h"
#include "jitsframe.h"
#include "unwind.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The usage text of RaptorJIT's standalone command (its luajit.c): the
 * evidence that the program parses `-a PATH`. */
static const char rj_usage_a[] = "-a path   Enable auditlog at path.";

static int file_has(const char *path, const char *needle)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	if (fd < 0)
		return 0;
	int found = 0;
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
	    sb.st_size < (256 << 20)) {
		char *b = malloc((size_t)sb.st_size + 1);
		ssize_t got = 0, r;
		while (b && got < sb.st_size &&
		       (r = read(fd, b + got, (size_t)(sb.st_size - got))) > 0)
			got += r;
		found = b && got == sb.st_size &&
			memmem(b, (size_t)got, needle, strlen(needle));
		free(b);
	}
	close(fd);
	return found;
}

int cli_rj_kind(const char *exe)
{
	uint64_t va;
	if (!exe || uw_elf_symbol(exe, "lj_auditlog_open", &va))
		return CLI_RJ_NO;
	return file_has(exe, rj_usage_a) ? CLI_RJ_CLI : CLI_RJ_EMBED;
}

const char *cli_rj_user_log(char *const *args, int nargs)
{
	/* as its luajit.c's collectargs reads them: -e -l -j -p -a take an
	 * argument (attached or the next word); "--", "-" or a non-option
	 * (the script) end the options; -b ends them too */
	for (int i = 1; i < nargs; i++) {
		const char *a = args[i];
		if (a[0] != '-' || !a[1] || (a[1] == '-' && !a[2]) ||
		    a[1] == 'b')
			return NULL;
		if (strchr("eljpa", a[1])) {
			const char *v = a[2]		? a + 2
					: i + 1 < nargs ? args[++i]
							: NULL;
			if (a[1] == 'a')
				return v;
		}
	}
	return NULL;
}

/* ------------------------------------------------ its processes */

struct pidscan {
	const char *want; /* this program, else any RaptorJIT one */
	struct cli_rj_proc *out;
	int n, max;
	/* files checked (path -> RaptorJIT?), a few */
	struct {
		char *path;
		int rj;
	} seen[64];
	int nseen;
};

static int is_rj_file(struct pidscan *s, const char *path)
{
	for (int i = 0; i < s->nseen; i++)
		if (!strcmp(s->seen[i].path, path))
			return s->seen[i].rj;
	int rj = cli_rj_kind(path) != CLI_RJ_NO;
	if (s->nseen < 64 && (s->seen[s->nseen].path = strdup(path)))
		s->seen[s->nseen++].rj = rj;
	return rj;
}

static int on_mmap(const struct pd_event *e, void *ctx)
{
	struct pidscan *s = ctx;
	if (e->kind != PD_MMAP || !e->u.m.filename ||
	    e->u.m.filename[0] != '/' || (e->u.m.prot && !(e->u.m.prot & 4)))
		return 0;
	for (int i = 0; i < s->n; i++)
		if (s->out[i].pid == e->u.m.pid)
			return 0;
	const char *f = e->u.m.filename;
	if (s->want ? strcmp(f, s->want) != 0 : !is_rj_file(s, f))
		return 0;
	if (s->n == s->max)
		return 1;
	s->out[s->n].pid = e->u.m.pid;
	snprintf(s->out[s->n].exe, sizeof(s->out[s->n].exe), "%s", f);
	s->n++;
	return 0;
}

int cli_rj_procs(const char *data, const char *exe, struct cli_rj_proc *out,
		 int max, int *clockid, char *err, size_t errlen)
{
	struct perfdata *pd;
	if (pd_open(&pd, data, err, errlen))
		return -1;
	if (clockid)
		*clockid = pd_clockid(pd);
	struct pidscan s = {.want = exe, .out = out, .max = max};
	int rc = pd_each(pd, on_mmap, &s, err, errlen);
	pd_close(pd);
	for (int i = 0; i < s.nseen; i++)
		free(s.seen[i].path);
	return rc < 0 ? -1 : s.n;
}

/* ------------------------------------------------ the region */

static int first_event(const struct rj_record *rec, void *arg)
{
	if (strcmp(rec->kind, "event") || !rec->nanotime)
		return 0;
	*(uint64_t *)arg = rec->nanotime;
	return 1;
}

int cli_rj_open(const char *who, const char *path, struct rj_log **out)
{
	char msg[512] = "";
	int rc = rj_log_open(out, path, msg, sizeof(msg));
	if (rc) {
		if (!msg[0])
			snprintf(msg, sizeof(msg), "%s", strerror(-rc));
		/* the reader's message names the file, as a rule */
		if (strstr(msg, path))
			fprintf(stderr, "%s: %s\n", who, msg);
		else
			fprintf(stderr, "%s: %s: %s\n", who, path, msg);
		return EX_INPUT;
	}
	const char *dmg = rj_log_damage(*out);
	if (dmg)
		fprintf(stderr,
			"%s: note: %s: %s; the traces before that are used\n",
			who, path, dmg);
	return EX_OK;
}

/* Where trace t starts, as the module names LuaJIT's traces for perf
 * (vm/sinks.c): the chunk and line of its GCtrace's startpt/startpc, "?"
 * and 0 where the log does not say; the chunk made one folded token. */
static uint32_t trace_where(const struct rj_log *log, const struct rj_trace *t,
			    char *chunk, size_t cap)
{
	char loc[256] = "?";
	uint64_t pt = 0, pc = 0;
	uint32_t tsz = rj_log_type_size(log, "GCtrace"), line = 0;
	if (t->raw &&
	    !rj_log_getf(log, "GCtrace", "startpt", t->raw, tsz, &pt) &&
	    !rj_log_getf(log, "GCtrace", "startpc", t->raw, tsz, &pc))
		rj_log_proto_loc(log, pt, pc, t->record_offset, loc,
				 sizeof(loc));
	char *colon = strrchr(loc, ':');
	if (colon && colon[1] >= '0' && colon[1] <= '9') {
		line = (uint32_t)strtoul(colon + 1, NULL, 10);
		*colon = 0;
	}
	for (char *c = loc; *c; c++)
		if (*c == '\n' || *c == ';' || *c == ' ')
			*c = '_';
	snprintf(chunk, cap, "%s", loc[0] ? loc : "?");
	return line;
}

/* The log's traces as a jitdump in a->jdir (jit-PID.dump: each trace a
 * code load at its trace_stop time, named TRACE_n::chunk:line with that
 * line on its first and last byte), so that report names trace frames at
 * each sample's time as it does LuaJIT's. No unwinding info: perf never
 * injects a dump written after the run, and our unwinder reads the region.
 * Only the traces the region has. A note on failure: unwinding does not
 * need it. */
static void rj_jitdump(const struct cli_rj_args *a, const struct rj_log *log,
		       uint32_t cframe_jit, uint64_t t0)
{
	struct jd_writer *w;
	int e = jd_open_as(&w, a->jdir, a->pid, t0);
	if (e) {
		fprintf(stderr,
			"%s: note: no jitdump of the log's traces in %s: %s "
			"(trace frames stay unnamed)\n",
			a->who, a->jdir, strerror(-e));
		return;
	}
	size_t n = rj_log_ntraces(log);
	for (size_t i = 0; i < n && !e; i++) {
		const struct rj_trace *t = rj_log_trace(log, i);
		struct jsf_row rows[8];
		uint32_t nrows = 0;
		const char *why;
		if (rj_log_trace_rows(log, t, cframe_jit, rows, 8, &nrows,
				      &why))
			continue; /* not in the region either */
		char chunk[256], name[320];
		uint32_t line = trace_where(log, t, chunk, sizeof(chunk));
		snprintf(name, sizeof(name), "TRACE_%" PRIu32 "::%s:%" PRIu32,
			 t->traceno, chunk, line);
		struct jd_line lines[2] = {
		    {t->mcode, line, chunk},
		    {t->mcode + t->szmcode - 1, line, chunk}};
		e = jd_code(w, t->mcode, t->mc, t->szmcode, name, NULL, 0,
			    lines, line ? 2 : 0, t->born_ns ? t->born_ns : 1,
			    NULL, NULL, NULL);
	}
	if (e)
		fprintf(stderr, "%s: note: writing %s: %s\n", a->who,
			jd_path(w), strerror(-e));
	jd_close(w);
}

int cli_rj_region(const struct cli_rj_args *a, struct rj_log *log,
		  struct jsf_region **keep)
{
	const char *who = a->who;
	char msg[512] = "";
	int rc;
	uint32_t cframe = 0, cframe_jit = 0;
	if (rj_log_frame(log, &cframe, &cframe_jit, msg, sizeof(msg))) {
		fprintf(stderr, "%s: %s: refused: %s\n", who, a->log, msg);
		return EX_INPUT;
	}
	if (a->binary) {
		/* the log's CFRAME_SIZE must be the binary's own frame: the
		 * CFA of its interpreter's FDE (.debug_frame) at its start */
		uint64_t va;
		int32_t off = 0;
		int e = uw_elf_symbol(a->binary, "lj_vm_asm_begin", &va);
		if (!e)
			e = uw_elf_sp_cfa(a->binary, va, &off);
		if (e || off < 0 || (uint32_t)off != cframe) {
			char got[96];
			if (e)
				snprintf(
				    got, sizeof(got), "%s",
				    e == -EINVAL   ? "not a readable ELF file"
				    : e == -ENOENT ? "no lj_vm_asm_begin "
						     "with a CFI row"
						   : "its CFA there is not "
						     "rsp-based");
			else
				snprintf(got, sizeof(got),
					 "CFA = rsp + %d at lj_vm_asm_begin",
					 (int)off);
			fprintf(stderr,
				"%s: %s: refused: the log's interpreter frame "
				"(CFRAME_SIZE %u) is not %s's (%s): its "
				"traces cannot be unwound from this log\n",
				who, a->log, cframe, a->binary, got);
			return EX_INPUT;
		}
	}
	uint64_t t0 = a->create_ns;
	if (!t0)
		rj_log_foreach(log, first_event, &t0);
	struct jsf_region_opts ro = {.sz = sizeof(ro),
				     .flags = JSF_REGION_REPLACE,
				     .producer_pid = a->pid,
				     .create_ns = t0 ? t0 : 1};
	struct jsf_region *r;
	rc = jsf_region_create(&r, a->out, &ro);
	if (rc) {
		fprintf(stderr, "%s: cannot create the region %s: %s\n", who,
			a->out ? a->out : "(memory)", jsf_strerror(rc));
		return EX_INPUT;
	}
	struct rj_region_stats st = {0};
	rc = rj_log_to_region(log, cframe_jit, r, &st, msg, sizeof(msg));
	if (rc) {
		fprintf(stderr, "%s: %s: no region: %s\n", who, a->log,
			msg[0] ? msg : strerror(-rc));
		jsf_region_destroy(r);
		if (a->out)
			unlink(a->out);
		return EX_INPUT;
	}
	printf("%s: auditlog %s: %u traces, %u published, %u refused, %u "
	       "without machine code, %u flushes; region %s for pid %u%s%s\n",
	       who, a->log, st.traces, st.published, st.refused, st.no_mcode,
	       st.flushes, a->out ? a->out : jsf_region_path(r),
	       a->pid ? a->pid : (uint32_t)getpid(),
	       st.refused ? "; first refusal: " : "",
	       st.refused ? st.first_refusal : "");
	fflush(stdout);
	if (a->jdir)
		rj_jitdump(a, log, cframe_jit, t0 ? t0 : 1);
	if (keep)
		*keep = r;
	else
		jsf_region_destroy(r);
	return EX_OK;
}
