/* NO_SYS=1: lwIP needs no threads, semaphores or mailboxes from us. */
#ifndef TUNSPLIT_ARCH_SYS_ARCH_H
#define TUNSPLIT_ARCH_SYS_ARCH_H
typedef int sys_prot_t;
#endif
