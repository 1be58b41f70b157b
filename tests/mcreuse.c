/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim for tests/t_vm.sh (flush storms): after LuaJIT frees its
 * machine-code areas (jit.flush()), put the next area back at the address
 * of the first one, so that new traces reuse the addresses of flushed ones.
 * LuaJIT itself picks a random 64 KiB-aligned hint near the interpreter for
 * a fresh area; this only replaces that hint (the first area was accepted
 * by LuaJIT's own range check, so its address is valid for later ones too).
 *
 * Matches mmap(hint != NULL, len, PROT_READ|PROT_WRITE,
 * MAP_PRIVATE|MAP_ANONYMOUS, -1, 0): nothing else in the process asks for
 * an anonymous mapping at a given address. `JSF_MCREUSE_LOG=1` prints one
 * line per steered mapping to stderr.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/types.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
typedef int (*munmap_fn)(void *, size_t);

static void *g_first; /* the first area */
static size_t g_len;
static int g_first_free; /* unmapped since */
static unsigned long g_steered;

static void *steer(mmap_fn real, void *addr, size_t len, int prot, int flags,
		   int fd, off_t off)
{
	if (!addr || fd != -1 || off || prot != (PROT_READ | PROT_WRITE) ||
	    flags != (MAP_PRIVATE | MAP_ANONYMOUS))
		return real(addr, len, prot, flags, fd, off);
	if (!g_first) {
		void *p = real(addr, len, prot, flags, fd, off);
		if (p == addr) {
			g_first = p;
			g_len = len;
		}
		return p;
	}
	if (g_first_free && len == g_len) {
		void *p = real(g_first, len, prot, flags | MAP_FIXED_NOREPLACE,
			       fd, off);
		if (p == g_first) {
			g_first_free = 0;
			g_steered++;
			if (getenv("JSF_MCREUSE_LOG"))
				fprintf(stderr,
					"mcreuse: area %lu back at %p\n",
					g_steered, p);
			return p;
		}
		if (p != MAP_FAILED)
			((munmap_fn)dlsym(RTLD_NEXT, "munmap"))(p, len);
	}
	return real(addr, len, prot, flags, fd, off);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	static mmap_fn real;
	if (!real)
		real = (mmap_fn)dlsym(RTLD_NEXT, "mmap");
	return steer(real, addr, len, prot, flags, fd, off);
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	static mmap_fn real;
	if (!real)
		real = (mmap_fn)dlsym(RTLD_NEXT, "mmap64");
	return steer(real, addr, len, prot, flags, fd, off);
}

int munmap(void *addr, size_t len)
{
	static munmap_fn real;
	if (!real)
		real = (munmap_fn)dlsym(RTLD_NEXT, "munmap");
	int rc = real(addr, len);
	if (rc == 0 && g_first && addr == g_first && len == g_len)
		g_first_free = 1;
	return rc;
}
