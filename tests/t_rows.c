/* SPDX-License-Identifier: MIT */
/*
 * Row encoding: bytes checked against hand-assembled SFrame V3 records
 * (binutils include/sframe.h: attribute record {u16 num_fres; u8 info;
 * u8 info2; u8 rep_size}; FRE {start (1/2/4 bytes); u8 info; words}), and
 * the narrowest widths chosen at every boundary.
 */
#include "harness.h"
#include "internal.h"

#include <errno.h>

static size_t enc(const struct jsf_row *rows, uint32_t n, uint32_t size,
		  uint8_t *out)
{
	return sf_encode_func(rows, n, size, out);
}

int main(void)
{
	uint8_t b[256];
	CASE("a LuaJIT side-trace head and tail, byte for byte")
	{
		/* size 200 -> 1-byte starts (type 0). Rows: CFA=sp+112 at 0,
		 * sp+240 at 23 (after the add), sp+96 at 190 (tail), all with
		 * rbp at CFA-16. */
		struct jsf_row r[3] = {
		    {.offset = 0,
		     .cfa_base = JSF_SP,
		     .cfa_offset = 112,
		     .has_fp = true,
		     .fp_offset = -16},
		    {.offset = 23,
		     .cfa_base = JSF_SP,
		     .cfa_offset = 240,
		     .has_fp = true,
		     .fp_offset = -16},
		    {.offset = 190,
		     .cfa_base = JSF_SP,
		     .cfa_offset = 96,
		     .has_fp = true,
		     .fp_offset = -16},
		};
		static const uint8_t want[] = {
		    3,	  0,	0x00,
		    0,	  0, /* 3 FREs, type ADDR1, PCINC, default */
		    0,	  0x05, 112,
		    0xf0, /* info: SP(1) | 2 words<<1 | 1B<<5 */
		    23,	  0x25, 0xf0,
		    0x00, 0xf0, 0xff, /* 240 needs 2-byte words */
		    190,  0x05, 96,
		    0xf0,
		};
		size_t n = enc(r, 3, 200, b);
		CHECK_EQ(n, sizeof(want));
		CHECK(!memcmp(b, want, sizeof(want)), "bytes differ");
	}
	CASE("outermost and FP-based rows; 2- and 4-byte starts")
	{
		struct jsf_row r[2] = {
		    {.offset = 0, .cfa_base = JSF_FP, .cfa_offset = 16},
		    {.offset = 300, .outermost = true},
		};
		static const uint8_t want[] = {
		    2,	  0,	0x01, 0,
		    0,			  /* type ADDR2: size 0x101..0x10000 */
		    0,	  0,	0x02, 16, /* FP base (0), 1 word, 1 byte */
		    0x2c, 0x01, 0x01,	  /* offset 300, 0 words: outermost */
		};
		size_t n = enc(r, 2, 0x10000, b);
		CHECK_EQ(n, sizeof(want));
		CHECK(!memcmp(b, want, sizeof(want)), "bytes differ");
		n = enc(r, 2, 0x10001, b); /* ADDR4 */
		CHECK_EQ(b[2], 0x02);
		CHECK_EQ(n, 5 + (4 + 1 + 1) + (4 + 1));
	}
	CASE("narrowest widths at every boundary, and decode(encode(x)) == x")
	{
		static const uint32_t sizes[] = {1,	255,   256,   257,
						 65535, 65536, 65537, 1u << 30};
		static const unsigned types[] = {0, 0, 0, 1, 1, 1, 2, 2};
		for (unsigned i = 0; i < 8; i++)
			CHECK(sf_fre_type(sizes[i]) == types[i], "size %u",
			      sizes[i]);
		static const int32_t vals[] = {
		    0,	   127,	   128,	   -128,      -129,	32767,
		    32768, -32768, -32769, INT32_MAX, INT32_MIN};
		static const unsigned wbytes[] = {1, 1, 2, 1, 2, 2,
						  4, 2, 4, 4, 4};
		for (unsigned i = 0; i < 11; i++)
			for (unsigned j = 0; j < 11; j++) {
				struct jsf_row r = {.offset = 0,
						    .cfa_base = JSF_SP,
						    .cfa_offset = vals[i],
						    .has_fp = true,
						    .fp_offset = vals[j]};
				size_t n = enc(&r, 1, 16, b);
				unsigned w = wbytes[i] > wbytes[j] ? wbytes[i]
								   : wbytes[j];
				CHECK(n == 5 + 1 + 1 + 2 * w,
				      "%d,%d: %zu bytes", vals[i], vals[j], n);
				struct jsf_row back;
				CHECK(sf_read_func(b, (uint32_t)n, 0, 16, 3,
						   &back, NULL, 0) == 1,
				      "decodes");
				CHECK(back.cfa_offset == vals[i] &&
					  back.fp_offset == vals[j] &&
					  back.has_fp &&
					  back.cfa_base == JSF_SP,
				      "round trip %d,%d", vals[i], vals[j]);
			}
	}
	CASE("malformed records are refused")
	{
		struct jsf_row r = {
		    .offset = 0, .cfa_base = JSF_SP, .cfa_offset = 8};
		size_t n = enc(&r, 1, 16, b);
		struct jsf_row out;
		CHECK_EQ(
		    sf_read_func(b, (uint32_t)n - 1, 0, 16, 0, &out, NULL, 0),
		    -EBADMSG);
		b[0] = 0; /* zero FREs */
		CHECK_EQ(sf_read_func(b, (uint32_t)n, 0, 16, 0, &out, NULL, 0),
			 -EBADMSG);
		b[0] = 2; /* more FREs than bytes */
		CHECK_EQ(sf_read_func(b, (uint32_t)n, 0, 16, 0, &out, NULL, 0),
			 -EBADMSG);
		b[0] = 1;
		b[5] = 16; /* start offset == size */
		CHECK_EQ(sf_read_func(b, (uint32_t)n, 0, 16, 0, &out, NULL, 0),
			 -EBADMSG);
		b[5] = 0;
		b[6] = (uint8_t)(3 << 5 | 1 << 1 | 1); /* word size code 3 */
		CHECK_EQ(sf_read_func(b, (uint32_t)n, 0, 16, 0, &out, NULL, 0),
			 -EBADMSG);
		CHECK_EQ(sf_check_rows(sf_arch(0), &r, 1, 16), 0);
		CHECK_EQ(sf_check_rows(sf_arch(0), &r, 1, 0), -EINVAL);
	}
	return h_exit();
}
