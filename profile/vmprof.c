/* SPDX-License-Identifier: MIT */
/*
 * RaptorJIT's vmprofile files (its lj_vmprofile.c, -p FILE): a header u32
 * magic 0x1d50f007, u16 major 4, u16 minor 0, then uint64_t
 * count[4097][11] (per trace number, per VM state), little endian, no
 * padding. Row 0 is the overflow/unattributed bucket. The layout is the
 * file format's, fixed by its major version: a file of another magic,
 * major version or size is refused with one message.
 */
#include "profile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const pf_vmp_state[PF_VMP_STATES] = {"interp", "c",	  "gc",	 "exit",
						 "record", "opt", "asm", "head",
						 "loop",   "jgc", "ffi"};

static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

int pf_vmprofile_parse(struct pf_vmprofile *out, const void *buf, size_t len,
		       char *msg, size_t msglen)
{
	const uint8_t *b = buf;
	memset(out, 0, sizeof(*out));
	if (len < PF_VMP_HEADER) {
		snprintf(msg, msglen,
			 "not a vmprofile: %zu bytes, shorter than its "
			 "%d-byte header",
			 len, PF_VMP_HEADER);
		return -EINVAL;
	}
	uint32_t magic = (uint32_t)le(b, 4);
	out->major = (uint16_t)le(b + 4, 2);
	out->minor = (uint16_t)le(b + 6, 2);
	if (magic != PF_VMP_MAGIC) {
		snprintf(msg, msglen,
			 "not a vmprofile: magic 0x%08x, not 0x%08x", magic,
			 PF_VMP_MAGIC);
		return -EINVAL;
	}
	if (out->major != PF_VMP_MAJOR) {
		snprintf(msg, msglen,
			 "vmprofile format %u.%u: only major version %d is "
			 "known",
			 out->major, out->minor, PF_VMP_MAJOR);
		return -EINVAL;
	}
	if (len != PF_VMP_SIZE) {
		snprintf(msg, msglen,
			 "vmprofile format %u.%u of %zu bytes: it has %d "
			 "(%d header + %d x %d x 8)",
			 out->major, out->minor, len, PF_VMP_SIZE,
			 PF_VMP_HEADER, PF_VMP_TRACES, PF_VMP_STATES);
		return -EINVAL;
	}
	const uint8_t *p = b + PF_VMP_HEADER;
	for (int t = 0; t < PF_VMP_TRACES; t++)
		for (int s = 0; s < PF_VMP_STATES; s++, p += 8)
			out->count[t][s] = le(p, 8);
	return 0;
}

int pf_vmprofile_read(struct pf_vmprofile *out, const char *path, char *msg,
		      size_t msglen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		snprintf(msg, msglen, "%s: %s", path, strerror(e));
		return -e;
	}
	/* one read more than the size: a longer file is caught */
	size_t cap = PF_VMP_SIZE + 1, len = 0;
	uint8_t *buf = malloc(cap);
	if (!buf) {
		close(fd);
		snprintf(msg, msglen, "%s: out of memory", path);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			snprintf(msg, msglen, "%s: %s", path, strerror(e));
			free(buf);
			close(fd);
			return -e;
		}
		if (n == 0 || (len += (size_t)n) == cap)
			break;
	}
	close(fd);
	char why[200];
	int rc = pf_vmprofile_parse(out, buf, len, why, sizeof(why));
	free(buf);
	if (rc) {
		if (len == cap)
			snprintf(why, sizeof(why),
				 "vmprofile of more than %d bytes (its format "
				 "has exactly %d)",
				 PF_VMP_SIZE, PF_VMP_SIZE);
		snprintf(msg, msglen, "%s: %s", path, why);
	}
	return rc;
}
