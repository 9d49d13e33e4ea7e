"""Click logs simulated from graded relevance: data with a known position bias.

Real click logs come from a production ranker (the *logging policy*) that showed each query's
documents in some order; users then click documents they examined and found attractive.
:func:`simulate_clicks` replays that on graded data, one or more *sessions* per query::

    graded data (y, qid)                     one session of query q
      |                                        order = logging policy (random / given scores)
      |   logging policy  ------------------>  position p = 0, 1, 2, ... of each shown row
      |                                        examined?  pbm: P = propensity[p]
      |                                                   cascade: top-down until a click stops
      v                                        clicked?   examined and attractive:
    ClickLog(rows, query, session,                        P = noise + (1 - noise) *
             position, clicks)                                (2**g - 1) / (2**g_max - 1)

The position-based model (PBM, Richardson et al. 2007; the model Unbiased LambdaMART and
LightGBM's position bias assume) separates examination from relevance, so its
``propensities`` are exactly what a debiasing ranker should recover (relative to position
0). The cascade model (Craswell et al. 2008) is the harder case where examination depends
on the documents above.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["ClickLog", "simulate_clicks"]

_MODELS = ("pbm", "cascade")


class ClickLog(NamedTuple):
    """Simulated clicks, one entry per shown document and session, sessions in order of
    their query then session number, each session's rows in displayed order.

    Attributes
    ----------
    rows : int64 ndarray
        Index of the document in the input arrays: ``X[log.rows]`` are its features,
        ``y[log.rows]`` its true grade.
    query : ndarray
        The input ``qid`` of the document (split train / test by it: sessions of one query
        share documents).
    session : int64 ndarray
        Session id (``query number * n_sessions + session number``): the ``qid`` to train a
        click model on.
    position : int64 ndarray
        0-based position at which the document was shown in its session.
    clicks : float64 ndarray
        1.0 where the document was clicked, else 0.0.
    """

    rows: np.ndarray
    query: np.ndarray
    session: np.ndarray
    position: np.ndarray
    clicks: np.ndarray


def _check_1d(arr, name, n):
    arr = np.asarray(arr)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D with one entry per row; got shape {arr.shape}.")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} entries but y has {n}; it needs one "
                         f"per row.")
    return arr


def _check_grades(y):
    y = _check_1d(y, "y", None)
    if y.dtype.kind not in "iuf":
        raise ValueError(f"y must hold numeric relevance grades; got dtype {y.dtype}.")
    y = y.astype(np.float64)
    bad = ~np.isfinite(y) | (y < 0) | (y != np.floor(y))
    if bad.any():
        row = int(np.argmax(bad))
        raise ValueError(f"y must hold whole relevance grades >= 0; y[{row}] = {y[row]!r}.")
    return y


def _check_number(value, name, lo, hi):
    if isinstance(value, bool) or not isinstance(value, Real) or not lo <= value <= hi:
        raise ValueError(f"{name} must be a number in [{lo}, {hi}]; got {value!r}.")
    return float(value)


def _examination(propensities, position):
    """Examination probability of each shown position (``pbm``)."""
    if propensities is None:  # 1 / (position + 1): the power law of Joachims et al. 2017
        return 1.0 / (position + 1.0)
    if callable(propensities):
        exam = np.asarray(propensities(position.copy()), dtype=np.float64)
        if exam.shape != position.shape:
            raise ValueError(f"propensities(position) must return one value per position "
                             f"(shape {position.shape}); got shape {exam.shape}.")
    else:
        table = np.asarray(propensities, dtype=np.float64)
        if table.ndim != 1 or table.size == 0:
            raise ValueError(f"propensities must be None, a callable or a non-empty 1-D "
                             f"array (the examination probability of positions 0, 1, ...);"
                             f" got shape {table.shape}.")
        # positions beyond the table are never examined (a page of len(table) results)
        exam = np.where(position < table.size, table[np.minimum(position, table.size - 1)],
                        0.0)
    if not np.all(np.isfinite(exam) & (exam >= 0) & (exam <= 1)):
        raise ValueError("propensities must be examination probabilities in [0, 1]; got "
                         f"values from {np.nanmin(exam)!r} to {np.nanmax(exam)!r}.")
    return exam


def _display_order(group, logging_scores, rng):
    """Rows by (session group, displayed position): the logging policy's ranking."""
    if logging_scores is None:  # a uniformly random order per session
        return np.lexsort((rng.random_sample(group.size), group))
    # a production ranker: descending score, ties by row (every session the same order)
    return np.lexsort((np.arange(group.size), -logging_scores, group))


def simulate_clicks(y, qid, *, model="pbm", propensities=None, logging_scores=None,
                    max_grade=None, noise=0.1, stop_probability=1.0, n_sessions=1,
                    n_shown=None, random_state=None) -> ClickLog:
    """Simulate a click log from graded relevance with a known position bias.

    Each query is shown ``n_sessions`` times by a logging policy; in each session a user
    examines positions and clicks attractive documents (see the module docstring).

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        True relevance grades, whole numbers >= 0.
    qid : array-like of shape (n_samples,)
        Query id of each row (any order, any sortable dtype).
    model : {"pbm", "cascade"}, default="pbm"
        ``"pbm"``: the position-based model, ``P(click) = propensity(position) *
        attractiveness(grade)``, independently per document. ``"cascade"``: the user scans
        from position 0 down, clicks an examined document with probability
        ``attractiveness(grade)`` and stops after a click with probability
        ``stop_probability`` (1: the classic cascade model, one click at most).
    propensities : None, callable or array-like, default=None
        ``"pbm"`` only: the examination probability of each 0-based position. None:
        ``1 / (position + 1)``; a callable maps an int64 array of positions to
        probabilities; an array gives positions ``0 .. len - 1`` (later positions are never
        examined).
    logging_scores : array-like of shape (n_samples,) or None, default=None
        The logging policy. None: every session shows its query's documents in a uniformly
        random order (a randomised experiment: position and relevance independent). Scores
        (e.g. a production ranker's): documents shown by descending score, ties in row
        order, the same order in every session (position then correlates with relevance,
        as in real logs).
    max_grade : int or None, default=None
        The grade of attractiveness 1 before noise; None: ``y.max()``.
    noise : float in [0, 1], default=0.1
        Click noise ``eps``: ``attractiveness(g) = eps + (1 - eps) * (2**g - 1) /
        (2**max_grade - 1)``, so an examined irrelevant document is clicked with probability
        ``eps``.
    stop_probability : float in [0, 1], default=1.0
        ``"cascade"`` only: chance the user stops after a click.
    n_sessions : int >= 1, default=1
        Sessions (displays) per query.
    n_shown : int >= 1 or None, default=None
        Show only the first ``n_shown`` documents of each session (a result page): the
        others are not in the log. None: every document is shown.
    random_state : int, RandomState instance or None, default=None
        Seed of the logging policy's shuffles and of the clicks; an int gives the same log
        every call.

    Returns
    -------
    ClickLog
        ``rows``, ``query``, ``session``, ``position``, ``clicks``: one entry per shown
        document and session (``n_samples * n_sessions`` when every document is shown), each
        session's rows in displayed order.

    Examples
    --------
    >>> import numpy as np
    >>> from skltr.datasets import simulate_clicks
    >>> y = np.array([0, 2, 1, 0, 1]); qid = np.array([1, 1, 1, 2, 2])
    >>> log = simulate_clicks(y, qid, n_sessions=3, random_state=0)
    >>> log.session.shape
    (15,)
    >>> sorted(set(log.position.tolist()))
    [0, 1, 2]
    >>> bool(np.all((log.clicks == 0) | (log.clicks == 1)))
    True
    """
    y = _check_grades(y)
    n = y.shape[0]
    qid = _check_1d(qid, "qid", n)
    if model not in _MODELS:
        raise ValueError(f"model must be one of {_MODELS}; got {model!r}.")
    if model == "cascade" and propensities is not None:
        raise ValueError("propensities is for model='pbm': the cascade model's examination "
                         "follows from the clicks above (stop_probability).")
    if isinstance(n_sessions, bool) or not isinstance(n_sessions, Integral) or n_sessions < 1:
        raise ValueError(f"n_sessions must be an int >= 1; got {n_sessions!r}.")
    if n_shown is not None and (isinstance(n_shown, bool) or not isinstance(n_shown, Integral)
                                or n_shown < 1):
        raise ValueError(f"n_shown must be None or an int >= 1; got {n_shown!r}.")
    noise = _check_number(noise, "noise", 0.0, 1.0)
    stop_probability = _check_number(stop_probability, "stop_probability", 0.0, 1.0)
    top = float(y.max()) if n else 0.0
    if max_grade is None:
        max_grade = top
    if isinstance(max_grade, bool) or not isinstance(max_grade, Real) or not (
            max_grade >= max(top, 1.0) and float(max_grade) == np.floor(max_grade)):
        raise ValueError(f"max_grade must be a whole number >= max(y.max(), 1) = "
                         f"{max(top, 1.0):g}; got {max_grade!r}.")
    if logging_scores is not None:
        logging_scores = _check_1d(logging_scores, "logging_scores", n).astype(np.float64)
        if not np.isfinite(logging_scores).all():
            raise ValueError("logging_scores must be finite.")
    rng = check_random_state(random_state)

    queries, q_of_row = np.unique(qid, return_inverse=True)
    q_of_row = q_of_row.reshape(-1)
    # every (row, session): its session group q * n_sessions + s
    rows = np.tile(np.arange(n, dtype=np.int64), n_sessions)
    group = (q_of_row.astype(np.int64)[rows] * n_sessions
             + np.repeat(np.arange(n_sessions, dtype=np.int64), n))
    order = _display_order(group, None if logging_scores is None else logging_scores[rows],
                           rng)
    rows, group = rows[order], group[order]
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    sizes = np.diff(np.r_[starts, group.size])
    position = np.arange(group.size, dtype=np.int64) - np.repeat(starts, sizes)
    if n_shown is not None:  # a result page: the rest of each session is never shown
        page = position < n_shown
        rows, group, position = rows[page], group[page], position[page]
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        sizes = np.diff(np.r_[starts, group.size])

    grade = y[rows]
    attract = noise + (1.0 - noise) * (np.exp2(grade) - 1.0) / (np.exp2(max_grade) - 1.0)
    if model == "pbm":
        clicks = rng.random_sample(rows.size) < _examination(propensities, position) * attract
    else:
        wants = rng.random_sample(rows.size) < attract
        stops = wants & (rng.random_sample(rows.size) < stop_probability)
        # examined: no stopping click strictly above in the session
        stops_so_far = np.cumsum(stops) - np.repeat(np.cumsum(stops)[starts] - stops[starts],
                                                    sizes)
        clicks = wants & (stops_so_far - stops == 0)
    return ClickLog(rows=rows, query=qid[rows], session=group, position=position,
                    clicks=clicks.astype(np.float64))
