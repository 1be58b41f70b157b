/* SPDX-License-Identifier: MIT */
/*
 * The auditlog, Lua side: turns LuaJIT's VM events into records (schema:
 * docs/AUDITLOG.md) with jit.util called from C, and reads logs back into
 * Lua tables (jsf.audit_records / jsf.audit_status). Callers hold the
 * module's lock around every call except the reading API.
 */
#ifndef VM_AUDIT_H
#define VM_AUDIT_H

#include <lua.h>
#include <stdint.h>

#define VAUDIT_DEFAULT 1
#define VAUDIT_FULL 2

struct vaudit_cfg {
	const char *path;
	int level;	    /* VAUDIT_DEFAULT or VAUDIT_FULL */
	uint64_t max_bytes; /* rotation bound per file, 0: none */
	unsigned keep;	    /* rotated files kept */
	int replace;
};

/* Open the log (process-wide) and write its header; 0, or -errno with a
 * message in err. */
int vaudit_open(lua_State *L, const struct vaudit_cfg *cfg, char *err,
		size_t errlen);
/* The level being logged, 0 when not logging (or in a fork child). */
int vaudit_level(void);
const char *vaudit_path(void);
/* Event handlers: the event's arguments are the stack, 1..top.
 * trace: "start"|"stop"|"abort"|"flush", ...; spadj from the rows (or
 * INT32_MIN when unknown). */
void vaudit_trace(lua_State *L, int32_t spadj);
void vaudit_record(lua_State *L);
void vaudit_texit(lua_State *L);
/* Close with a final note (NULL: none). */
void vaudit_close(const char *note);
/* stats into the table at the top of the stack */
void vaudit_stats(lua_State *L);
/* Register audit_records and audit_status in the table at the top. */
void vaudit_register(lua_State *L);

#endif
