/* SPDX-License-Identifier: MIT */
/* Internal: an ELF object of the unwinder (elfcfi.c, symbolize.c). */
#ifndef JSF_ELFOBJ_H
#define JSF_ELFOBJ_H

#include "unwind.h"

#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>

struct esym {
	uint64_t addr, size;
	uint32_t name; /* offset into strs */
};

struct elfobj {
	struct elfobj *next;
	char *path;
	int fd, dbg_fd;
	Elf *elf, *dbg;
	int dbg_tried, dcfi_tried, syms_loaded;
	Dwarf_CFI *cfi, *dcfi;
	Dwarf *dw, *dbg_dw;
	char bid[130];
	struct {
		uint64_t off, vaddr, filesz;
	} load[16];
	int nload;
	struct crow *rows, tmp;
	size_t nrows, cap;
	struct esym *syms;
	size_t nsyms;
	char *strs;
	char *image; /* [vdso]: our copy */
	/* .eh_frame_hdr's search table (initial locations) and the names
	 * "[file+0xSTART]" given to unnamed code by its FDE (symbolize.c) */
	int ehhdr_tried;
	const unsigned char *ehtab;
	size_t ehn;
	uint64_t ehaddr;
	struct fdename {
		uint64_t start;
		char *name;
	} * fdenames;
	size_t nfdenames, capfdenames;
	const unsigned char *sframe; /* the .sframe section, if any */
	size_t sframe_len;
	uint64_t sframe_addr;
};

/* elfsframe.c: the row of .sframe section s (loaded at sec_vaddr) at
 * vaddr: 1 found (r filled), 0 not covered, -1 damaged. */
int sframe_row(const unsigned char *s, size_t len, uint64_t sec_vaddr,
	       uint64_t vaddr, struct crow *r);

Elf *elfobj_debug(struct elfobj *o);

#endif
