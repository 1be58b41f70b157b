/* SPDX-License-Identifier: MIT */
/* Lengths of the x86-64 instructions LuaJIT trace heads are made of. */
#ifndef LJ_X86LEN_H
#define LJ_X86LEN_H

#include <stddef.h>
#include <stdint.h>

/* The length of the instruction at p (at most avail bytes), or -1 when it
 * is not in the decoded subset or does not fit. */
int x86_insn_len(const uint8_t *p, size_t avail);

#endif
