/* SPDX-License-Identifier: MIT */
/* Kernel symbols for the kernel part of perf's callchains (ksyms.c). */
#ifndef JSF_KSYMS_H
#define JSF_KSYMS_H

#include <stdint.h>

/* "symbol_[k]" of the kernel text symbol at or below addr, or NULL. */
const char *ksym_name(uint64_t addr);
void ksym_free(void);
/* Read symbols from path (a kallsyms copy, e.g. the one perf record keeps
 * in its build-id cache for the recorded kernel) instead of
 * /proc/kallsyms; before the first ksym_name. */
void ksym_use_file(const char *path);

#endif
