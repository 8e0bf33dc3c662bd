/* banned.h: functions vigil must not call (unbounded copies, shells). Included by util.h. */
#ifndef VIGIL_BANNED_H
#define VIGIL_BANNED_H

#define BANNED(func) sorry_##func##_is_banned_in_vigil

#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef gets
#define gets(x) BANNED(gets)
#undef system
#define system(x) BANNED(system)
#undef popen
#define popen(x, y) BANNED(popen)
#undef strtok
#define strtok(x, y) BANNED(strtok)

#endif
