/* Compiles lwIP's unmodified core/ipv6/inet6.c with our lwipopts.h. */
#include "core/ipv6/inet6.c"
