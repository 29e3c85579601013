/* Compiles lwIP's unmodified core/inet_chksum.c with our lwipopts.h. */
#include "core/inet_chksum.c"
