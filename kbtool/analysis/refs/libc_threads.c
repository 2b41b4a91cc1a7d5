/* Reference program for kbtool.analysis fingerprints: pthreads and atomics (threaded builds). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static atomic_int counter;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static _Thread_local int tls_value;
static int shared_total;

static void *worker(void *arg) {
    tls_value = (int)(size_t)arg;
    atomic_fetch_add(&counter, tls_value);
    int expected = 0;
    atomic_compare_exchange_strong(&counter, &expected, 1);
    pthread_mutex_lock(&mu);
    shared_total += tls_value;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    return arg;
}

int main(int argc, char **argv) {
    (void)argv;
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], 0, worker, (void *)(size_t)(i + argc));
    for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
    printf("%d %d\n", atomic_load(&counter), shared_total);
    return 0;
}
