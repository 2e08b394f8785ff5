/*
 * orbitmq._speedups: compiled twins of hot loops whose Python originals are the reference.
 *
 * Each function here has a pure-Python twin with the same signature and the same results for
 * every input (the tests run both over generated inputs and compare byte for byte):
 *
 *   plan_batch, write_batch_v4   orbitmq/store/batch_records.py
 *
 * `orbitmq.store.kernels` chooses between them; ORBITMQ_PURE_PYTHON=1 forces the Python ones.
 * Everything is bounds-checked against the buffers' lengths: a malformed batch body raises
 * ValueError(kind, remark) before a byte is written.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#define MAGIC_V1 ((int32_t)0xDAA320A7)
#define ITEM_HEAD 20
#define RECORD_HEAD_V4 88

static const char MESSAGE_ILLEGAL[] = "MESSAGE_ILLEGAL";
static const char PROPERTIES_SIZE_EXCEEDED[] = "PROPERTIES_SIZE_EXCEEDED";

static int32_t get_i32(const unsigned char *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}

static void put_i32(unsigned char *p, int32_t v) {
    uint32_t u = (uint32_t)v;
    p[0] = (unsigned char)(u >> 24); p[1] = (unsigned char)(u >> 16);
    p[2] = (unsigned char)(u >> 8); p[3] = (unsigned char)u;
}

static void put_i64(unsigned char *p, int64_t v) {
    uint64_t u = (uint64_t)v;
    for (int i = 7; i >= 0; i--) { p[i] = (unsigned char)u; u >>= 8; }
}

static PyObject *refuse(const char *kind, PyObject *remark) {
    if (remark != NULL) {
        PyObject *args = Py_BuildValue("(sO)", kind, remark);
        if (args != NULL) { PyErr_SetObject(PyExc_ValueError, args); Py_DECREF(args); }
        Py_DECREF(remark);
    }
    return NULL;
}

/* One item of a batch body, located and checked. */
typedef struct {
    int32_t flag;
    Py_ssize_t body_at, body_len;   /* the item's body inside the batch body */
    Py_ssize_t own_at, own_len;     /* its own property string */
    Py_ssize_t props_len;           /* the record's property string: own (+ 0x02) + extra */
    int separator;                  /* whether a 0x02 goes between own and extra */
} item_t;

/* Parses the item at `pos`; returns its total length, or -1 with ValueError set. */
static Py_ssize_t parse_item(const unsigned char *b, Py_ssize_t end, Py_ssize_t pos, Py_ssize_t extra_len,
                             Py_ssize_t max_props, item_t *it) {
    if (pos + ITEM_HEAD > end)
        return refuse(MESSAGE_ILLEGAL, PyUnicode_FromFormat("bad batch body: item at %zd is truncated", pos)), -1;
    int32_t total = get_i32(b + pos);
    int32_t body_len = get_i32(b + pos + 16);
    if (body_len < 0 || pos + ITEM_HEAD + (Py_ssize_t)body_len + 2 > end)
        return refuse(MESSAGE_ILLEGAL, PyUnicode_FromFormat("bad batch body: item at %zd is truncated", pos)), -1;
    Py_ssize_t body_end = pos + ITEM_HEAD + body_len;
    Py_ssize_t own_len = ((Py_ssize_t)b[body_end] << 8) | b[body_end + 1];
    if ((Py_ssize_t)total != 22 + (Py_ssize_t)body_len + own_len || pos + (Py_ssize_t)total > end)
        return refuse(MESSAGE_ILLEGAL, PyUnicode_FromFormat("bad batch body: item at %zd does not match its size", pos)), -1;
    it->flag = get_i32(b + pos + 12);
    it->body_at = pos + ITEM_HEAD;
    it->body_len = body_len;
    it->own_at = body_end + 2;
    it->own_len = own_len;
    it->separator = 0;
    if (extra_len == 0)
        it->props_len = own_len;
    else if (own_len == 0)
        it->props_len = extra_len;
    else {
        it->separator = b[it->own_at + own_len - 1] != 2;
        it->props_len = own_len + it->separator + extra_len;
    }
    if (it->props_len > max_props)
        return refuse(PROPERTIES_SIZE_EXCEEDED,
                      PyUnicode_FromFormat("properties are %zd bytes; at most %zd fit", it->props_len, max_props)), -1;
    return total;
}

/* Sizes every record; returns the item count (>= 1) or -1 with ValueError set. */
static Py_ssize_t plan(const unsigned char *b, Py_ssize_t end, Py_ssize_t extra_len, Py_ssize_t fixed,
                       Py_ssize_t max_props, Py_ssize_t *total_out) {
    if (end == 0)
        return refuse(MESSAGE_ILLEGAL, PyUnicode_FromString("batch body holds no message")), -1;
    Py_ssize_t pos = 0, count = 0, total = 0;
    item_t it;
    while (pos < end) {
        Py_ssize_t n = parse_item(b, end, pos, extra_len, max_props, &it);
        if (n < 0) return -1;
        total += fixed + it.body_len + it.props_len;
        pos += n;
        count++;
    }
    *total_out = total;
    return count;
}

static PyObject *py_plan_batch(PyObject *self, PyObject *args) {
    Py_buffer body, extra;
    Py_ssize_t fixed, max_props, total = 0;
    if (!PyArg_ParseTuple(args, "y*y*nn:plan_batch", &body, &extra, &fixed, &max_props))
        return NULL;
    Py_ssize_t count = plan(body.buf, body.len, extra.len, fixed, max_props, &total);
    PyBuffer_Release(&body);
    PyBuffer_Release(&extra);
    if (count < 0) return NULL;
    return Py_BuildValue("(nn)", count, total);
}

/* The value of property NAME in raw[0:len]: the last "\x02NAME\x01", else a leading "NAME\x01";
 * up to the next 0x02. Sets at and n to where the value is (n = 0 when absent). */
static void peek(const unsigned char *raw, Py_ssize_t len, const char *name, Py_ssize_t *at, Py_ssize_t *n) {
    Py_ssize_t name_len = (Py_ssize_t)strlen(name);
    Py_ssize_t start = -1;
    for (Py_ssize_t i = len - (name_len + 2); i >= 0; i--) {
        if (raw[i] == 2 && raw[i + name_len + 1] == 1 && memcmp(raw + i + 1, name, (size_t)name_len) == 0) {
            start = i + name_len + 2;
            break;
        }
    }
    if (start < 0 && len >= name_len + 1 && raw[name_len] == 1 && memcmp(raw, name, (size_t)name_len) == 0)
        start = name_len + 1;
    *at = 0;
    *n = 0;
    if (start < 0) return;
    Py_ssize_t stop = start;
    while (stop < len && raw[stop] != 2) stop++;
    *at = start;
    *n = stop - start;
}

/* Java's String.hashCode over the UTF-16 code units of a str, as a signed 32-bit value. */
static int32_t java_hash(PyObject *s) {
    uint32_t h = 0;
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c > 0xFFFF) {
            c -= 0x10000;
            h = 31u * h + (uint32_t)(0xD800 + (c >> 10));
            h = 31u * h + (uint32_t)(0xDC00 + (c & 0x3FF));
        } else {
            h = 31u * h + (uint32_t)c;
        }
    }
    return (int32_t)h;
}

static PyObject *decode(const unsigned char *p, Py_ssize_t n) {
    return PyUnicode_DecodeUTF8((const char *)p, n, "replace");
}

static PyObject *py_write_batch_v4(PyObject *self, PyObject *args) {
    Py_buffer buf, body, extra, topic;
    Py_ssize_t pos, fixed, max_props;
    int queue_id, sys_flag, born_port, store_port;
    long long queue_offset, phys, born_ts, store_ts;
    Py_buffer born_ip, store_ip;
    if (!PyArg_ParseTuple(args, "w*ny*y*y*nniLLiLy*iLy*i:write_batch_v4", &buf, &pos, &body, &extra, &topic,
                          &fixed, &max_props, &queue_id, &queue_offset, &phys, &sys_flag, &born_ts, &born_ip,
                          &born_port, &store_ts, &store_ip, &store_port))
        return NULL;
    PyObject *out = NULL;
    const unsigned char *b = body.buf;
    Py_ssize_t end = body.len, total = 0;
    if (born_ip.len != 4 || store_ip.len != 4) {
        PyErr_SetString(PyExc_TypeError, "write_batch_v4 takes 4-byte IPv4 addresses");
        goto done;
    }
    if (fixed != RECORD_HEAD_V4 + topic.len + 2) {
        PyErr_SetString(PyExc_ValueError, "fixed must be the IPv4 record head plus the topic field and length");
        goto done;
    }
    Py_ssize_t count = plan(b, end, extra.len, fixed, max_props, &total);
    if (count < 0) goto done;
    if (pos < 0 || pos > buf.len || total > buf.len - pos) {
        refuse(MESSAGE_ILLEGAL, PyUnicode_FromString("the batch does not fit where it was to be written"));
        goto done;
    }
    out = PyList_New(count);
    if (out == NULL) goto done;
    unsigned char *w = (unsigned char *)buf.buf + pos;
    const unsigned char *ex = extra.buf;
    Py_ssize_t at = 0;
    item_t it;
    for (Py_ssize_t k = 0; k < count; k++) {
        Py_ssize_t n = parse_item(b, end, at, extra.len, max_props, &it);
        if (n < 0) { Py_CLEAR(out); goto done; }  /* cannot happen: plan() passed */
        Py_ssize_t size = fixed + it.body_len + it.props_len;
        uint32_t crc = (uint32_t)crc32(0L, b + it.body_at, (uInt)it.body_len) & 0x7FFFFFFFu;
        put_i32(w, (int32_t)size);
        put_i32(w + 4, MAGIC_V1);
        put_i32(w + 8, (int32_t)crc);
        put_i32(w + 12, queue_id);
        put_i32(w + 16, it.flag);
        put_i64(w + 20, (int64_t)queue_offset);
        put_i64(w + 28, (int64_t)phys);
        put_i32(w + 36, sys_flag);
        put_i64(w + 40, (int64_t)born_ts);
        memcpy(w + 48, born_ip.buf, 4);
        put_i32(w + 52, born_port);
        put_i64(w + 56, (int64_t)store_ts);
        memcpy(w + 64, store_ip.buf, 4);
        put_i32(w + 68, store_port);
        put_i32(w + 72, 0);          /* RECONSUMETIMES */
        put_i64(w + 76, 0);          /* PREPAREDTRANSACTIONOFFSET */
        put_i32(w + 84, (int32_t)it.body_len);
        unsigned char *p = w + RECORD_HEAD_V4;
        memcpy(p, b + it.body_at, (size_t)it.body_len);
        p += it.body_len;
        memcpy(p, topic.buf, (size_t)topic.len);
        p += topic.len;
        p[0] = (unsigned char)(it.props_len >> 8);
        p[1] = (unsigned char)it.props_len;
        p += 2;
        unsigned char *props = p;
        memcpy(p, b + it.own_at, (size_t)it.own_len);
        p += it.own_len;
        if (it.separator) *p++ = 2;
        if (extra.len) memcpy(p, ex, (size_t)extra.len);
        /* What the ConsumeQueue and IndexFile need, read back from the written properties. */
        Py_ssize_t v_at, v_n;
        long long tags_code = 0;
        peek(props, it.props_len, "TAGS", &v_at, &v_n);
        if (v_n > 0) {
            PyObject *tags = decode(props + v_at, v_n);
            if (tags == NULL) { Py_CLEAR(out); goto done; }
            tags_code = java_hash(tags);
            Py_DECREF(tags);
        }
        peek(props, it.props_len, "KEYS", &v_at, &v_n);
        PyObject *keys = decode(props + v_at, v_n);
        peek(props, it.props_len, "UNIQ_KEY", &v_at, &v_n);
        PyObject *uniq = decode(props + v_at, v_n);
        if (keys == NULL || uniq == NULL) { Py_XDECREF(keys); Py_XDECREF(uniq); Py_CLEAR(out); goto done; }
        PyObject *row = Py_BuildValue("(nLNN)", size, tags_code, keys, uniq);
        if (row == NULL) { Py_CLEAR(out); goto done; }
        PyList_SET_ITEM(out, k, row);
        w += size;
        phys += size;
        queue_offset += 1;
        at += n;
    }
done:
    PyBuffer_Release(&buf);
    PyBuffer_Release(&body);
    PyBuffer_Release(&extra);
    PyBuffer_Release(&topic);
    PyBuffer_Release(&born_ip);
    PyBuffer_Release(&store_ip);
    return out;
}

static PyMethodDef methods[] = {
    {"plan_batch", py_plan_batch, METH_VARARGS,
     "plan_batch(body, extra, fixed, max_props) -> (count, total record bytes); see orbitmq.store.batch_records"},
    {"write_batch_v4", py_write_batch_v4, METH_VARARGS,
     "write_batch_v4(buf, pos, body, extra, topic_field, fixed, max_props, queue_id, queue_offset, phys, sys_flag, "
     "born_ts, born_ip, born_port, store_ts, store_ip, store_port) -> [(size, tags code, keys, uniq key)]"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "orbitmq._speedups", "Compiled twins of OrbitMQ's hot loops (see orbitmq.speedups).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__speedups(void) { return PyModule_Create(&module); }
