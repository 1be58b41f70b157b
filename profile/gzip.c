/* SPDX-License-Identifier: MIT */
/* gzip through zlib (profint.h), for profile.pb.gz. */
#include "profint.h"

#include <errno.h>
#include <string.h>
#include <zlib.h>

int pf_gzip_to(FILE *o, const uint8_t *buf, size_t len)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	/* windowBits 15 + 16: a gzip wrapper */
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	uint8_t out[65536];
	int err = 0, zr;
	size_t off = 0;
	do {
		size_t chunk = len - off > (1u << 30) ? (1u << 30) : len - off;
		z.next_in = (Bytef *)(uintptr_t)(buf + off);
		z.avail_in = (uInt)chunk;
		off += chunk;
		int flush = off == len ? Z_FINISH : Z_NO_FLUSH;
		do {
			z.next_out = out;
			z.avail_out = sizeof(out);
			zr = deflate(&z, flush);
			if (zr == Z_STREAM_ERROR) {
				err = -EIO;
				break;
			}
			size_t have = sizeof(out) - z.avail_out;
			if (have && fwrite(out, 1, have, o) != have)
				err = -EIO;
		} while (!err && z.avail_out == 0);
	} while (!err && off < len);
	if (!err && zr != Z_STREAM_END)
		err = -EIO;
	deflateEnd(&z);
	return err;
}
