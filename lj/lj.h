/* SPDX-License-Identifier: MIT */
/*
 * LuaJIT's x86-64 machine facts, pure (no VM access, no Lua API): unwind
 * rows of one trace from its machine code (ljrows.h), x86-64 instruction
 * lengths for trace heads (x86len.h), and raw reads of GCtrace and
 * SnapShot memory in LuaJIT's known layouts (ljtrace.h). The library's
 * face: nothing outside lj/ includes the others.
 */
#ifndef LJ_FACE_H
#define LJ_FACE_H

#include "ljrows.h"
#include "ljtrace.h"
#include "x86len.h"

#endif
