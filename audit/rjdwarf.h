/* SPDX-License-Identifier: MIT */
/*
 * The DWARF embedded in a RaptorJIT auditlog (the blob "lj_dwarf.dwo", a
 * split-DWARF ELF object, gcc -g3 -gdwarf-4 -gsplit-dwarf), read from
 * memory with elfutils: named struct/union/typedef sizes, members by name,
 * and the -g3 macro definitions (.debug_macro.dwo, parsed here, bounds-
 * checked). Private to audit/rjlog.c.
 */
#ifndef ALOG_RJDWARF_H
#define ALOG_RJDWARF_H

#include <stddef.h>
#include <stdint.h>

struct rjd;

/* Open the blob (copied). 0, or -EINVAL with msg. */
int rjd_open(struct rjd **out, const uint8_t *blob, size_t len, char *msg,
	     size_t msglen);
void rjd_close(struct rjd *d);
/* Size of a named struct/union/typedef (typedefs followed); 0 if unknown. */
uint32_t rjd_type_size(struct rjd *d, const char *type);
/* A member's offset and size (members of anonymous struct/union members
 * are found too). 0 or -ENOENT. */
int rjd_field(struct rjd *d, const char *type, const char *member,
	      uint32_t *off, uint32_t *size);
/* A macro's definition text (after the name and its parameter list), or
 * NULL. */
const char *rjd_macro(struct rjd *d, const char *name);
/* Number of macro definitions read (for tests). */
size_t rjd_nmacros(struct rjd *d);

#endif
