/* Compiles lwIP's unmodified core/ipv6/mld6.c with our lwipopts.h. */
#include "core/ipv6/mld6.c"
