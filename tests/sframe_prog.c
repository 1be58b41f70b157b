/* SPDX-License-Identifier: MIT */
/* tests/t_report.sh (.sframe): a program built with `as --gsframe` and
 * without frame pointers, whose samples jitsframe report unwinds through
 * its .sframe section; the same samples unwound through .eh_frame
 * (JITSFRAME_NO_SFRAME=1) are the reference. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static double leaf(int n)
{
	double x = 0;
	for (int i = 0; i < n; i++)
		x += i * 0.5 / (i + 1);
	return x;
}

__attribute__((noinline)) static double mid(int d, int n)
{
	char buf[64];
	if (d == 0)
		return leaf(n);
	snprintf(buf, sizeof buf, "%d", d);
	return mid(d - 1, n) + buf[0];
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	double s = 0;
	for (int k = 0; k < n; k++)
		s += mid(k % 7, 20000 + k % 13);
	printf("%f\n", s);
	return 0;
}
