/* SPDX-License-Identifier: MIT */
/* Verify, on the running VM, the frame layout the rows depend on. */
#ifndef VM_VMCHECK_H
#define VM_VMCHECK_H

#include <stdint.h>

struct lj_layout {
	uintptr_t vm_start, vm_end; /* the interpreter's code (its FDE) */
	int cfa_interp;		    /* CFA = rsp + this in the interpreter */
	int cfa_jit;		    /* CFA = rsp + this on trace entry */
};

/*
 * `pc` is an address inside the interpreter (a return address into it).
 * Returns 0 with the layout, or -1 with *why describing the mismatch.
 */
int lj_check_layout(uintptr_t pc, struct lj_layout *out, const char **why);

#endif
