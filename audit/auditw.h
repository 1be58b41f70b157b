/* SPDX-License-Identifier: MIT */
/*
 * The auditlog file writer (no Lua): framing, each record copied into a
 * shared mapping of the (preallocated) file, or written with write(2)
 * where that is not possible (a returned record survives SIGKILL either
 * way: it is in the page cache), a size bound
 * with rotation that repeats the header, and a clean stop on any write
 * error (the file is cut back to its last whole record and ends, when
 * there is room, with a note record). See docs/AUDITLOG.md.
 */
#ifndef JSF_AUDITW_H
#define JSF_AUDITW_H

#include <stddef.h>
#include <stdint.h>

struct jsf_auditw_opts {
	const char *path;
	uint64_t max_bytes; /* rotate when a file reaches this (0: never) */
	unsigned keep;	    /* rotated files kept: PATH.1 .. PATH.keep */
	int replace;	    /* else an existing PATH is an error (EEXIST) */
	int nomap;	    /* write(2) every record, never a shared mapping */
};

struct jsf_auditw;

/* Create PATH and write the magic and the header record (a msgpack
 * payload, kept to start every rotated file). 0 or -errno. */
int jsf_auditw_open(struct jsf_auditw **w, const struct jsf_auditw_opts *o,
		    const void *header, size_t len);
/* Rotate first if the file has reached max_bytes and no deferred record
 * is waiting (the caller sees it in jsf_auditw_gen()). Call before
 * building a record. */
void jsf_auditw_begin(struct jsf_auditw *w);
/* Append one record. 0 on success; -errno when it failed: the log has
 * stopped (jsf_auditw_error() says why; later calls fail at once). */
int jsf_auditw_write(struct jsf_auditw *w, const void *payload, size_t len);
/* Keep a record to go out with the next jsf_auditw_write (or flush), in
 * the same write(2): for records that only matter with the one that
 * follows (a trace's start before its stop or abort). A SIGKILL before
 * that write loses them. 0 or -errno (stopped). */
int jsf_auditw_defer(struct jsf_auditw *w, const void *payload, size_t len);
int jsf_auditw_flush(struct jsf_auditw *w);
/* Bumped by every rotation (each file starts with the header again). */
unsigned jsf_auditw_gen(const struct jsf_auditw *w);
const char *jsf_auditw_error(const struct jsf_auditw *w); /* NULL: fine */
uint64_t jsf_auditw_bytes(const struct jsf_auditw *w);	  /* all files */
uint64_t jsf_auditw_records(const struct jsf_auditw *w);
/* Write a note record (ev=note, ns, text) if still writing; close. */
void jsf_auditw_close(struct jsf_auditw *w, const char *final_note);
/* Detach in a fork child: free without writing or truncating. */
void jsf_auditw_forget(struct jsf_auditw *w);
/* A note record's msgpack payload into buf (returns its length, 0 if it
 * does not fit). */
size_t jsf_audit_note_payload(char *buf, size_t cap, const char *text);

#endif
