package dev.torchjob.operator.cli;

import java.util.List;

/** Rows laid out in columns as kubectl lays out its tables: each column as wide as its widest cell, three spaces apart. */
final class Columns {
    private Columns() {
    }

    static String render(List<List<String>> rows, String indent) {
        int[] widths = new int[rows.get(0).size()];
        rows.forEach(row -> {
            for (int i = 0; i < row.size(); i++) {
                widths[i] = Math.max(widths[i], row.get(i).length());
            }
        });
        StringBuilder out = new StringBuilder();
        for (List<String> row : rows) {
            StringBuilder line = new StringBuilder(indent);
            for (int i = 0; i < row.size(); i++) {
                line.append(i == row.size() - 1 ? row.get(i) : String.format("%-" + (widths[i] + 3) + "s", row.get(i)));
            }
            out.append(line.toString().stripTrailing()).append('\n');
        }
        return out.toString();
    }
}
