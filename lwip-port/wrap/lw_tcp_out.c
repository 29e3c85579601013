/* Compiles lwIP's unmodified core/tcp_out.c with our lwipopts.h. */
#include "core/tcp_out.c"
