/* Compiles lwIP's unmodified core/tcp_in.c with our lwipopts.h. */
#include "core/tcp_in.c"
