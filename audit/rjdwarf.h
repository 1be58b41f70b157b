/* SPDX-License-Identifier: MIT */
/*
 * The DWARF embedded in a RaptorJIT auditlog (the blob "lj_dwarf.dwo", a
 * split-DWARF ELF object, gcc -g3 -gdwarf-4 -gsplit-dwarf), read from
 * memory with elfutils: named struct/union/typedef sizes, members by name,
 * and the -g3 macro definitions (.debug_macro.dwo, parsed here, bounds-
 * checked). Private to audit/ (rjlog.c owns the handle, rjinfo.c reads
 * enums through it).
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
/* Every enumerator: fn(type name or NULL, enumerator name, value, arg)
 * for the enumeration types at a unit's top level (the type's own tag
 * name) and again under each typedef naming one (unsigned enums' values
 * unsigned); fn's nonzero return stops and is returned. */
typedef int (*rjd_enum_fn)(const char *type, const char *name, int64_t val,
			   void *arg);
int rjd_enums(struct rjd *d, rjd_enum_fn fn, void *arg);
/* The DWARF of an open log (audit/rjlog.c), NULL if it has none. */
struct rj_log;
struct rjd *rj_log_rjd(const struct rj_log *log);
/* Number of macro definitions read (for tests). */
size_t rjd_nmacros(struct rjd *d);

#endif
