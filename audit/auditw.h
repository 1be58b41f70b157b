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
#ifndef ALOG_AUDITW_H
#define ALOG_AUDITW_H

#include <stddef.h>
#include <stdint.h>

struct alogw_opts {
	const char *path;
	uint64_t max_bytes; /* rotate when a file reaches this (0: never) */
	unsigned keep;	    /* rotated files kept: PATH.1 .. PATH.keep */
	int replace;	    /* else an existing PATH is an error (EEXIST) */
	int nomap;	    /* write(2) every record, never a shared mapping */
};

struct alogw;

/* Create PATH and write the magic and the header record (a msgpack
 * payload, kept to start every rotated file). 0 or -errno. */
int alogw_open(struct alogw **w, const struct alogw_opts *o, const void *header,
	       size_t len);
/* Rotate first if the file has reached max_bytes and no deferred record
 * is waiting (the caller sees it in alogw_gen()). Call before
 * building a record. */
void alogw_begin(struct alogw *w);
/* Append one record. 0 on success; -errno when it failed: the log has
 * stopped (alogw_error() says why; later calls fail at once). */
int alogw_write(struct alogw *w, const void *payload, size_t len);
/* Keep a record to go out with the next alogw_write (or flush), in
 * the same write(2): for records that only matter with the one that
 * follows (a trace's start before its stop or abort). A SIGKILL before
 * that write loses them. 0 or -errno (stopped). */
int alogw_defer(struct alogw *w, const void *payload, size_t len);
int alogw_flush(struct alogw *w);
/* Bumped by every rotation (each file starts with the header again). */
unsigned alogw_gen(const struct alogw *w);
const char *alogw_error(const struct alogw *w); /* NULL: fine */
uint64_t alogw_bytes(const struct alogw *w);	/* all files */
uint64_t alogw_records(const struct alogw *w);
/* Write a note record (ev=note, ns, text) if still writing; close. */
void alogw_close(struct alogw *w, const char *final_note);
/* Detach in a fork child: free without writing or truncating. */
void alogw_forget(struct alogw *w);
/* A note record's msgpack payload into buf (returns its length, 0 if it
 * does not fit). */
size_t alog_note_payload(char *buf, size_t cap, const char *text);

#endif
