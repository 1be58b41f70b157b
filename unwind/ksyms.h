/* SPDX-License-Identifier: MIT */
/* Kernel symbols for the kernel part of perf's callchains (ksyms.c). */
#ifndef JSF_KSYMS_H
#define JSF_KSYMS_H

#include <stdint.h>

struct ksyms;

/* A symbol table read (on the first ksym_name) from path: a kallsyms copy,
 * e.g. the one perf record keeps in its build-id cache for the recorded
 * kernel; NULL path: /proc/kallsyms. NULL if out of memory. */
struct ksyms *ksyms_new(const char *path);
/* "symbol_[k]" of the kernel text symbol at or below addr, or NULL. */
const char *ksym_name(struct ksyms *k, uint64_t addr);
void ksyms_free(struct ksyms *k);
/*
 * A trimmed copy's stop marker: a text symbol of that name ends the range
 * of the kept symbol before it; an address at or above it (and below the
 * next kept symbol) has no name (NULL), where the whole file would have
 * named it.
 */
#define KSYM_STOP "jitsframe_trimmed"
/*
 * Write to out (replaced by rename; mode of the table's own file) the
 * table's file (perf's layout, searched in place) reduced to the lines
 * that named an address so far, each followed by a stop marker where the
 * next symbol above it was (unless that one is kept too), and _text and
 * _stext (perf's reference symbols) likewise: every address gets from it
 * the name the whole file gives, or none. 0, -ENOTSUP (not searched in
 * place, or nothing named yet), -errno.
 */
int ksyms_trim(struct ksyms *k, const char *out);

#endif
