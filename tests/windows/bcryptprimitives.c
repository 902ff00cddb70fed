/* A stand-in for Windows 10's bcryptprimitives.dll, for Wine < 8.13 only (CI runs Debian 12's
 * Wine 8.0). Rust >= 1.78 executables import ProcessPrng from it (rust-lang/rust#121337); without
 * it every Rust .exe exits with status 53 under that Wine. Its one export fills the buffer from
 * the system RNG through BCryptGenRandom, which Wine has. Real Windows has the DLL: this file is
 * never shipped. Built by scripts/windows-tests.sh with MinGW. */
#include <windows.h>
#include <bcrypt.h>

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG chunk = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!BCRYPT_SUCCESS(BCryptGenRandom(NULL, data, chunk, BCRYPT_USE_SYSTEM_PREFERRED_RNG)))
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
