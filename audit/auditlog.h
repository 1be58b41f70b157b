/* SPDX-License-Identifier: MIT */
/*
 * The auditlog library (audit/): the log's framing, CRC32C and record
 * reader (auditfmt.h), the file writer (auditw.h), the writer's msgpack
 * encoder (auditmp.h) and the decoder of the func records' bytecode dumps
 * (auditfunc.h). docs/AUDITLOG.md is the format; the reader of RaptorJIT's
 * own auditlog and the region built from it (rjlog.h). Used by the Lua module
 * (vm/) and the CLI (cli/); this header is the library's face: nothing outside
 * audit/ includes the others.
 */
#ifndef ALOG_AUDITLOG_H
#define ALOG_AUDITLOG_H

#include "auditfmt.h"
#include "auditfunc.h"
#include "auditmp.h"
#include "auditraw.h"
#include "auditw.h"
#include "rjlog.h"

#endif
