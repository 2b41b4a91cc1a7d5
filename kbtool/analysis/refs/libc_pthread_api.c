/* Reference program for kbtool.analysis fingerprints: the wider pthread API (condition
 * variables, trylock, once, rwlock, semaphores, keys, detach/exit) in threaded builds. */
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static sem_t sem;
static int ready, table[16];
static atomic_uint hits;

static void setup(void) { pthread_key_create(&key, free); }

static void *entry(void *arg) {
    pthread_once(&once, setup);
    pthread_setspecific(key, malloc(16));
    sem_wait(&sem);
    pthread_rwlock_rdlock(&rw);
    unsigned v = (unsigned)table[(size_t)arg & 15];
    pthread_rwlock_unlock(&rw);
    atomic_fetch_add(&hits, v);
    pthread_mutex_lock(&mu);
    while (!ready) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    if (pthread_mutex_trylock(&mu) == 0) pthread_mutex_unlock(&mu);
    if ((size_t)arg == 3) pthread_exit(arg);
    return pthread_equal(pthread_self(), (pthread_t)0) ? 0 : arg;
}

int main(int argc, char **argv) {
    (void)argv;
    pthread_t t[4];
    sem_init(&sem, 0, 0);
    for (int i = 0; i < 4; i++) pthread_create(&t[i], 0, entry, (void *)(size_t)(i + argc));
    pthread_rwlock_wrlock(&rw);
    for (int i = 0; i < 16; i++) table[i] = i * argc;
    pthread_rwlock_unlock(&rw);
    for (int i = 0; i < 4; i++) sem_post(&sem);
    pthread_mutex_lock(&mu);
    ready = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_detach(t[3]);
    for (int i = 0; i < 3; i++) pthread_join(t[i], 0);
    printf("%u\n", atomic_load(&hits));
    return 0;
}
