"""The 4x4 board's geometry: cells 0..15 row-major, 2x2 boxes, units, peers and digit bitmasks.

Left out: other sizes (9x9 would need only new constants, but nothing here is tested for it).
"""

SIZE = 4
BOX = 2
CELLS = SIZE * SIZE
DIGITS = tuple(range(1, SIZE + 1))
FULL = (1 << SIZE) - 1  # the candidate mask holding every digit

ROW_OF = tuple(i // SIZE for i in range(CELLS))
COL_OF = tuple(i % SIZE for i in range(CELLS))
BOX_OF = tuple((i // SIZE) // BOX * BOX + (i % SIZE) // BOX for i in range(CELLS))

ROWS = tuple(tuple(i for i in range(CELLS) if ROW_OF[i] == k) for k in range(SIZE))
COLS = tuple(tuple(i for i in range(CELLS) if COL_OF[i] == k) for k in range(SIZE))
BOXES = tuple(tuple(i for i in range(CELLS) if BOX_OF[i] == k) for k in range(SIZE))
#: the units holding each cell, as (kind, number, cells) with 1-based numbers, in the order row, column, box
UNITS_OF = tuple(
    (
        ("row", ROW_OF[i] + 1, ROWS[ROW_OF[i]]),
        ("column", COL_OF[i] + 1, COLS[COL_OF[i]]),
        ("box", BOX_OF[i] + 1, BOXES[BOX_OF[i]]),
    )
    for i in range(CELLS)
)
PEERS = tuple(
    tuple(sorted({j for unit in (ROWS[ROW_OF[i]], COLS[COL_OF[i]], BOXES[BOX_OF[i]]) for j in unit} - {i}))
    for i in range(CELLS)
)

BIT = (0, *(1 << (d - 1) for d in DIGITS))  # digit -> its bit; BIT[0] = 0 for an empty cell
POPCOUNT = tuple(bin(m).count("1") for m in range(FULL + 1))
DIGITS_IN = tuple(tuple(d for d in DIGITS if m & BIT[d]) for m in range(FULL + 1))


def cell_name(i: int) -> str:
    """`row R col C`, 1-based."""
    return f"row {ROW_OF[i] + 1} col {COL_OF[i] + 1}"
