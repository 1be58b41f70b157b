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

#endif
