/*
 * bcryptprimitives.dll for Wine 8: just ProcessPrng.
 *
 * Go 1.22 and later take every random byte of a Windows program from
 * ProcessPrng in bcryptprimitives.dll and refuse to start without it; Wine 8
 * does not ship that DLL. ProcessPrng is documented to fill the buffer and
 * always return TRUE, so it is built on SystemFunction036 (RtlGenRandom) from
 * advapi32.dll, which Wine has had for a long time and which draws from the
 * same system generator. .ci/wine/setup compiles this with
 * x86_64-w64-mingw32-gcc into the project's Wine prefix; it is test
 * infrastructure only and never ships with the binaries.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	/* RtlGenRandom takes a ULONG (32 bits on Windows), ProcessPrng a SIZE_T:
	 * feed it in chunks so a huge request is never silently truncated. */
	while (len > 0) {
		ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
		if (!SystemFunction036(data, n)) {
			/* ProcessPrng has no failure return a caller would check; dying
			 * loudly beats handing out unfilled "random" bytes. */
			RaiseFailFastException(NULL, NULL, 0);
		}
		data += n;
		len -= n;
	}
	return TRUE;
}
